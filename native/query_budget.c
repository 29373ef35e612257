/*
 * dualmind query budget: a time limit for one SQLite connection.
 *
 * better-sqlite3 compiles SQLite with SQLITE_OMIT_PROGRESS_CALLBACK (the
 * progress handler slot of the extension API is NULL) and exposes no
 * sqlite3_interrupt, so a statement it runs cannot be stopped from
 * JavaScript. This extension adds, per connection, a watchdog thread that
 * calls sqlite3_interrupt() (documented as safe from another thread) when a
 * deadline armed from SQL passes:
 *
 *   select dualmind_budget_arm(1000);    -- interrupt whatever runs 1000 ms from now
 *   ... the statement ...                -- fails with SQLITE_INTERRUPT past the deadline
 *   select dualmind_budget_disarm();     -- 1 when the deadline fired, else 0
 *
 * SQLite checks the interrupt flag on every loop jump of the VDBE and at the
 * start of every nested program, which includes each page FTS5 reads through
 * its blob handle, so prefix expansion and doclist merges stop too.
 *
 * The thread starts on the first arm and is joined when the connection
 * closes (the xDestroy of dualmind_budget_arm). Built by scripts/build-native.mjs.
 */
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

typedef struct Budget {
  sqlite3 *db;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  int started;
  int stop;
  int armed;
  int fired;
  struct timespec deadline; /* CLOCK_MONOTONIC */
} Budget;

static void *watchdog(void *arg) {
  Budget *b = (Budget *)arg;
  pthread_mutex_lock(&b->mu);
  while (!b->stop) {
    if (!b->armed) {
      pthread_cond_wait(&b->cv, &b->mu);
      continue;
    }
    int rc = pthread_cond_timedwait(&b->cv, &b->mu, &b->deadline);
    if (rc == ETIMEDOUT && b->armed && !b->stop) {
      /* The budget may have been disarmed and re-armed with a later deadline while this wait
         was timing out: only a deadline that has really passed interrupts. */
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec < b->deadline.tv_sec || (now.tv_sec == b->deadline.tv_sec && now.tv_nsec < b->deadline.tv_nsec)) continue;
      /* Under the mutex: xDestroy cannot finish (and the connection cannot go) meanwhile. */
      sqlite3_interrupt(b->db);
      b->armed = 0;
      b->fired = 1;
    }
  }
  pthread_mutex_unlock(&b->mu);
  return 0;
}

static void budgetArm(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  Budget *b = (Budget *)sqlite3_user_data(ctx);
  (void)argc;
  sqlite3_int64 ms = sqlite3_value_int64(argv[0]);
  if (ms < 1) ms = 1;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  pthread_mutex_lock(&b->mu);
  if (!b->started) {
    if (pthread_create(&b->thread, 0, watchdog, b) != 0) {
      pthread_mutex_unlock(&b->mu);
      sqlite3_result_error(ctx, "dualmind_budget: cannot start the watchdog thread", -1);
      return;
    }
    b->started = 1;
  }
  b->deadline.tv_sec = now.tv_sec + (time_t)(ms / 1000);
  b->deadline.tv_nsec = now.tv_nsec + (long)(ms % 1000) * 1000000L;
  if (b->deadline.tv_nsec >= 1000000000L) {
    b->deadline.tv_sec += 1;
    b->deadline.tv_nsec -= 1000000000L;
  }
  b->armed = 1;
  b->fired = 0;
  pthread_cond_signal(&b->cv);
  pthread_mutex_unlock(&b->mu);
  sqlite3_result_int(ctx, 1);
}

static void budgetDisarm(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  Budget *b = (Budget *)sqlite3_user_data(ctx);
  (void)argc;
  (void)argv;
  pthread_mutex_lock(&b->mu);
  int fired = b->fired;
  b->armed = 0;
  b->fired = 0;
  pthread_cond_signal(&b->cv);
  pthread_mutex_unlock(&b->mu);
  sqlite3_result_int(ctx, fired);
}

static void budgetDestroy(void *p) {
  Budget *b = (Budget *)p;
  pthread_mutex_lock(&b->mu);
  b->stop = 1;
  pthread_cond_signal(&b->cv);
  pthread_mutex_unlock(&b->mu);
  if (b->started) pthread_join(b->thread, 0);
  pthread_cond_destroy(&b->cv);
  pthread_mutex_destroy(&b->mu);
  free(b);
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_querybudget_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  SQLITE_EXTENSION_INIT2(pApi);
  Budget *b = (Budget *)calloc(1, sizeof(Budget));
  if (!b) return SQLITE_NOMEM;
  b->db = db;
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_mutex_init(&b->mu, 0);
  pthread_cond_init(&b->cv, &attr);
  pthread_condattr_destroy(&attr);
  /* Disarm first and without a destructor, so arm's xDestroy (which frees b) runs last.
     SQLITE_DIRECTONLY: only SQL the app runs may call them, never a trigger or view stored in a
     database file (an imported index.db could otherwise arm or disarm the watchdog). */
  int rc = sqlite3_create_function_v2(db, "dualmind_budget_disarm", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY, b, budgetDisarm, 0, 0, 0);
  if (rc != SQLITE_OK) {
    budgetDestroy(b);
  } else {
    /* On failure SQLite itself calls budgetDestroy(b); unregister disarm, which shares b. */
    rc = sqlite3_create_function_v2(db, "dualmind_budget_arm", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, b, budgetArm, 0, 0, budgetDestroy);
    if (rc != SQLITE_OK) sqlite3_create_function_v2(db, "dualmind_budget_disarm", 0, SQLITE_UTF8, 0, 0, 0, 0, 0);
  }
  if (rc != SQLITE_OK && pzErrMsg) *pzErrMsg = sqlite3_mprintf("dualmind_budget: cannot register functions (%d)", rc);
  return rc;
}
