/*
 * The handle table: callers only ever hold small integers, so a forged, stale or closed
 * handle is detected instead of dereferenced. handle = (generation << SLOT_BITS) | slot, with
 * the generation bumped on every removal so an old handle never matches a reused slot.
 */
#include "internal.h"

#define SLOT_BITS 12
#define SLOTS (1u << SLOT_BITS)
#define GEN_MASK ((1u << (31 - SLOT_BITS)) - 1u)

struct slot {
  struct sy_obj* obj;
  uint32_t gen; /* 1.. GEN_MASK, never 0 so a handle is never 0 */
};

static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static struct slot table[SLOTS];
static uint32_t next_slot;

static const char* type_name(enum sy_obj_type t) {
  switch (t) {
    case SY_OBJ_POOL: return "pool";
    case SY_OBJ_GROUP: return "group";
    case SY_OBJ_JOB: return "job";
  }
  return "object";
}

int32_t sy_handle_insert(struct sy_obj* obj) {
  pthread_mutex_lock(&table_mu);
  for (uint32_t k = 0; k < SLOTS; k++) {
    uint32_t i = (next_slot + k) % SLOTS;
    if (table[i].obj != NULL) continue;
    if (table[i].gen == 0) table[i].gen = 1;
    table[i].obj = obj;
    next_slot = (i + 1) % SLOTS;
    int32_t h = (int32_t)((table[i].gen << SLOT_BITS) | i);
    pthread_mutex_unlock(&table_mu);
    return h;
  }
  pthread_mutex_unlock(&table_mu);
  return sy_fail(SY_E_BUSY, "all %u handles are in use", SLOTS);
}

/* Slot of a live handle of this type, or NULL. Caller holds table_mu. */
static struct slot* find(int32_t handle, enum sy_obj_type type) {
  if (handle <= 0) return NULL;
  uint32_t i = (uint32_t)handle & (SLOTS - 1);
  uint32_t gen = (uint32_t)handle >> SLOT_BITS;
  struct slot* s = &table[i];
  if (s->obj == NULL || s->gen != gen || s->obj->type != type) return NULL;
  return s;
}

struct sy_obj* sy_handle_acquire(int32_t handle, enum sy_obj_type type) {
  pthread_mutex_lock(&table_mu);
  struct slot* s = find(handle, type);
  struct sy_obj* obj = NULL;
  if (s != NULL) {
    obj = s->obj;
    atomic_fetch_add(&obj->refs, 1);
  }
  pthread_mutex_unlock(&table_mu);
  if (obj == NULL) sy_fail(SY_E_HANDLE, "%s handle %d is not open (never created, or already closed)", type_name(type), handle);
  return obj;
}

int32_t sy_handle_remove(int32_t handle, enum sy_obj_type type) {
  pthread_mutex_lock(&table_mu);
  struct slot* s = find(handle, type);
  struct sy_obj* obj = NULL;
  if (s != NULL) {
    obj = s->obj;
    s->obj = NULL;
    s->gen = (s->gen % GEN_MASK) + 1;
  }
  pthread_mutex_unlock(&table_mu);
  if (obj == NULL) return sy_fail(SY_E_HANDLE, "%s handle %d is not open (never created, or already closed)", type_name(type), handle);
  sy_obj_release(obj);
  return SY_OK;
}

void sy_obj_release(struct sy_obj* obj) {
  if (obj != NULL && atomic_fetch_sub(&obj->refs, 1) == 1) obj->free_fn(obj);
}
