#!/usr/bin/env bash
# Placeholder until the C library lands: nothing to build yet.
exit 0
