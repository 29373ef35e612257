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
 *   select dualmind_budget_disarm(300);  -- the same, then arm again 300 ms from now
 *                                           (the deadline of a call this one ran inside)
 *
 * Arming and disarming only move the deadline under the mutex: the watchdog
 * wakes at the deadline it waits on, ignores one that has not passed (it was
 * moved later meanwhile) or that was disarmed, and is signalled only when it
 * waits on nothing or a new deadline is earlier than the one it waits on.
 * A disarmed deadline that has not passed is still slept until (only then
 * does the watchdog wait on nothing), so however late the thread runs, the
 * arms that follow find it asleep until a deadline no later than theirs.
 * Under a steady stream of budgeted statements it wakes about once per
 * budget, not twice per statement.
 *
 * SQLite checks the interrupt flag on every loop jump of the VDBE and at the
 * start of every nested program, which includes each page FTS5 reads through
 * its blob handle, so prefix expansion and doclist merges stop too.
 *
 * The thread starts on the first arm and is joined when the connection
 * closes (the xDestroy of dualmind_budget_arm). Built by scripts/build-native.mjs.
 */
#ifdef __linux__
#define _GNU_SOURCE /* pthread_setname_np */
#endif
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1
#include <pthread.h>
#ifndef _WIN32
#include <signal.h>
#endif
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
  int waiting;              /* the watchdog sleeps until `waitingFor` (else it sleeps until signalled) */
  struct timespec waitingFor;
} Budget;

static int before(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static void *watchdog(void *arg) {
  Budget *b = (Budget *)arg;
#ifdef __linux__
  /* Named so it can be told apart (in top -H, and by the tests that count its wake-ups). */
  pthread_setname_np(pthread_self(), "dm-query-budget");
#endif
  pthread_mutex_lock(&b->mu);
  while (!b->stop) {
    if (!b->armed) {
      /* Disarmed before its deadline: sleep on until that deadline all the same, so the next arm (a later deadline,
         the common case) need not signal. A thread that was slow to run and found the budget already disarmed would
         otherwise be signalled again by every arm until it caught one armed. */
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (!before(&now, &b->deadline)) {
        b->waiting = 0;
        pthread_cond_wait(&b->cv, &b->mu);
        continue;
      }
    }
    b->waiting = 1;
    b->waitingFor = b->deadline;
    pthread_cond_timedwait(&b->cv, &b->mu, &b->waitingFor);
    b->waiting = 0;
    if (!b->armed || b->stop) continue;
    /* Woken early (signalled, spuriously) or the deadline was moved later while this wait ran:
       only a deadline that has really passed interrupts. */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (before(&now, &b->deadline)) continue;
    /* Under the mutex: xDestroy cannot finish (and the connection cannot go) meanwhile. */
    sqlite3_interrupt(b->db);
    b->armed = 0;
    b->fired = 1;
  }
  pthread_mutex_unlock(&b->mu);
  return 0;
}

/* Arm `ms` from now; the caller holds b->mu. 0 on success, else the watchdog could not start. */
static int armLocked(Budget *b, sqlite3_int64 ms) {
  if (ms < 1) ms = 1;
  if (!b->started) {
#ifndef _WIN32
    /* The thread starts with every signal blocked: the process's signals go to its own threads, never wake the watchdog. */
    sigset_t all, was;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &was);
    int failed = pthread_create(&b->thread, 0, watchdog, b) != 0;
    pthread_sigmask(SIG_SETMASK, &was, 0);
    if (failed) return 1;
#else
    if (pthread_create(&b->thread, 0, watchdog, b) != 0) return 1;
#endif
    b->started = 1;
  }
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  b->deadline.tv_sec = now.tv_sec + (time_t)(ms / 1000);
  b->deadline.tv_nsec = now.tv_nsec + (long)(ms % 1000) * 1000000L;
  if (b->deadline.tv_nsec >= 1000000000L) {
    b->deadline.tv_sec += 1;
    b->deadline.tv_nsec -= 1000000000L;
  }
  b->armed = 1;
  b->fired = 0;
  /* A watchdog asleep until a deadline no later than this one wakes in time by itself. */
  if (!b->waiting || before(&b->deadline, &b->waitingFor)) pthread_cond_signal(&b->cv);
  return 0;
}

static void budgetArm(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  Budget *b = (Budget *)sqlite3_user_data(ctx);
  (void)argc;
  sqlite3_int64 ms = sqlite3_value_int64(argv[0]);
  pthread_mutex_lock(&b->mu);
  int failed = armLocked(b, ms);
  pthread_mutex_unlock(&b->mu);
  if (failed) {
    sqlite3_result_error(ctx, "dualmind_budget: cannot start the watchdog thread", -1);
    return;
  }
  sqlite3_result_int(ctx, 1);
}

/* disarm() or disarm(ms): whether the deadline fired; with ms > 0, then armed again ms from now. */
static void budgetDisarm(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  Budget *b = (Budget *)sqlite3_user_data(ctx);
  if (argc > 1) {
    sqlite3_result_error(ctx, "dualmind_budget_disarm takes at most one argument", -1);
    return;
  }
  sqlite3_int64 rearm = argc == 1 ? sqlite3_value_int64(argv[0]) : 0;
  pthread_mutex_lock(&b->mu);
  int fired = b->fired;
  /* No signal: the watchdog finds the budget disarmed when its wait ends. */
  b->armed = 0;
  b->fired = 0;
  int failed = rearm > 0 ? armLocked(b, rearm) : 0;
  pthread_mutex_unlock(&b->mu);
  if (failed) {
    sqlite3_result_error(ctx, "dualmind_budget: cannot start the watchdog thread", -1);
    return;
  }
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
  int rc = sqlite3_create_function_v2(db, "dualmind_budget_disarm", -1, SQLITE_UTF8 | SQLITE_DIRECTONLY, b, budgetDisarm, 0, 0, 0);
  if (rc != SQLITE_OK) {
    budgetDestroy(b);
  } else {
    /* On failure SQLite itself calls budgetDestroy(b); unregister disarm, which shares b. */
    rc = sqlite3_create_function_v2(db, "dualmind_budget_arm", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, b, budgetArm, 0, 0, budgetDestroy);
    if (rc != SQLITE_OK) sqlite3_create_function_v2(db, "dualmind_budget_disarm", -1, SQLITE_UTF8, 0, 0, 0, 0, 0);
  }
  if (rc != SQLITE_OK && pzErrMsg) *pzErrMsg = sqlite3_mprintf("dualmind_budget: cannot register functions (%d)", rc);
  return rc;
}
