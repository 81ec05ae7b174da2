/*
 * Jobs: a transfer or broadcast running on the job pool while the caller goes on (the
 * TypeScript side polls with sy_job_wait instead of blocking its event loop). A job is a
 * handle-table object with two references, the table's and the runner's; the final
 * sy_job_wait removes the handle, so every job is released exactly once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

struct sy_job {
  struct sy_obj obj;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
  int32_t status;
  char msg[512];
  int32_t (*run)(void*);
  void (*fin)(void*);
  void* ctx;
};

static void job_free(struct sy_obj* obj) {
  struct sy_job* j = (struct sy_job*)obj;
  pthread_mutex_destroy(&j->mu);
  pthread_cond_destroy(&j->cv);
  free(j);
}

static void job_main(void* arg) {
  struct sy_job* j = arg;
  sy_clear_error();
  int32_t st = j->run(j->ctx);
  j->fin(j->ctx);
  pthread_mutex_lock(&j->mu);
  j->status = st;
  if (st < 0) snprintf(j->msg, sizeof j->msg, "%s", sy_error_text());
  j->done = true;
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
  sy_obj_release(&j->obj);
}

int32_t sy_job_submit(int32_t (*run)(void*), void (*fin)(void*), void* ctx) {
  struct sy_job* j = calloc(1, sizeof *j);
  if (j == NULL) {
    fin(ctx);
    return sy_fail(SY_E_NOMEM, "out of memory");
  }
  j->obj.type = SY_OBJ_JOB;
  j->obj.free_fn = job_free;
  atomic_init(&j->obj.refs, 2); /* the table's and the runner's */
  pthread_mutex_init(&j->mu, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&j->cv, &attr);
  pthread_condattr_destroy(&attr);
  j->run = run, j->fin = fin, j->ctx = ctx;
  int32_t h = sy_handle_insert(&j->obj);
  if (h < 0) {
    fin(ctx);
    job_free(&j->obj);
    return h;
  }
  if (!sy_tpool_submit(sy_job_pool(), job_main, j)) {
    fin(ctx);
    sy_handle_remove(h, SY_OBJ_JOB);
    sy_obj_release(&j->obj);
    return sy_fail(SY_E_NOMEM, "cannot start a job thread");
  }
  return h;
}

int32_t sy_job_finished(int32_t status) {
  struct sy_job* j = calloc(1, sizeof *j);
  if (j == NULL) return sy_fail(SY_E_NOMEM, "out of memory");
  j->obj.type = SY_OBJ_JOB;
  j->obj.free_fn = job_free;
  atomic_init(&j->obj.refs, 1); /* the table's only: no runner */
  pthread_mutex_init(&j->mu, NULL);
  pthread_cond_init(&j->cv, NULL);
  j->done = true;
  j->status = status;
  if (status < 0) snprintf(j->msg, sizeof j->msg, "%s", sy_error_text());
  int32_t h = sy_handle_insert(&j->obj);
  if (h < 0) job_free(&j->obj);
  return h;
}

int32_t sy_job_wait(int32_t job, int64_t timeout_us) {
  sy_clear_error();
  struct sy_job* j = (struct sy_job*)sy_handle_acquire(job, SY_OBJ_JOB);
  if (j == NULL) return SY_E_HANDLE;
  /* Beyond ~11 days a deadline is "never"; this also keeps the arithmetic from overflowing. */
  if (timeout_us > 1000000000000ll) timeout_us = -1;
  pthread_mutex_lock(&j->mu);
  if (!j->done && timeout_us < 0) {
    while (!j->done) pthread_cond_wait(&j->cv, &j->mu);
  } else if (!j->done && timeout_us > 0) {
    uint64_t deadline = sy_now_ns() + (uint64_t)timeout_us * 1000u;
    struct timespec ts = {(time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u)};
    while (!j->done && pthread_cond_timedwait(&j->cv, &j->mu, &ts) == 0) {
    }
  }
  bool done = j->done;
  int32_t st = j->status;
  pthread_mutex_unlock(&j->mu);
  if (done) {
    sy_handle_remove(job, SY_OBJ_JOB); /* may already be gone if two callers waited at once */
    if (st < 0) sy_set_error_text(j->msg);
    else sy_clear_error();
  }
  sy_obj_release(&j->obj);
  return done ? st : SY_PENDING;
}
