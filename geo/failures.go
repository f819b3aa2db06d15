package geo

/*
#cgo pkg-config: gdal
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <cpl_error.h>

// GDAL reports an error through the handler of the thread it happens on.
// godal installs one around each call on the calling thread, but GDAL's own
// worker threads (block compression of GTiff and COG writers with
// NUM_THREADS, multi-threaded decoding) have none: their errors go to the
// process-wide handler, which prints them and lets the call that started
// the work succeed (an out-of-memory "PredictorEncodeTile" in a worker left
// a product of no-data tiles and exit status 0). This handler counts them
// and keeps the first message since the count was last read, then hands
// every message to the handler it replaced, so what GDAL prints is unchanged.

static pthread_mutex_t pnecFailMu = PTHREAD_MUTEX_INITIALIZER;
static long long pnecFailCount;
#define PNEC_FAIL_RING 8
static char pnecFailMsg[PNEC_FAIL_RING][256];
static CPLErrorHandler pnecPrevHandler;

static void CPL_STDCALL pnecFailureHandler(CPLErr cls, CPLErrorNum code, const char *msg) {
	if (cls >= CE_Failure) {
		pthread_mutex_lock(&pnecFailMu);
		char *slot = pnecFailMsg[pnecFailCount % PNEC_FAIL_RING];
		strncpy(slot, msg ? msg : "", 255);
		slot[255] = 0;
		pnecFailCount++;
		pthread_mutex_unlock(&pnecFailMu);
	}
	if (pnecPrevHandler != NULL) {
		pnecPrevHandler(cls, code, msg);
	} else {
		CPLDefaultErrorHandler(cls, code, msg);
	}
}

static void pnecInstallFailureHandler(void) {
	pnecPrevHandler = CPLSetErrorHandler(pnecFailureHandler);
	if (pnecPrevHandler == pnecFailureHandler) {
		pnecPrevHandler = NULL;
	}
}

// pnecFailures returns the number of failures so far and copies the
// message of failure number i (counted from 0) into buf, "" when it is no
// longer (or not yet) kept.
static long long pnecFailures(long long i, char *buf, int n) {
	pthread_mutex_lock(&pnecFailMu);
	long long c = pnecFailCount;
	buf[0] = 0;
	if (i >= 0 && i < c && c - i <= PNEC_FAIL_RING) {
		strncpy(buf, pnecFailMsg[i % PNEC_FAIL_RING], n - 1);
		buf[n - 1] = 0;
	}
	pthread_mutex_unlock(&pnecFailMu);
	return c;
}

// pnecEmitFailure reports a failure from a thread of GDAL's own (tests).
static void *pnecEmitThread(void *msg) {
	CPLError(CE_Failure, CPLE_AppDefined, "%s", (const char *)msg);
	return NULL;
}
static void pnecEmitFailureOffThread(const char *msg) {
	pthread_t t;
	if (pthread_create(&t, NULL, pnecEmitThread, (void *)msg) == 0) {
		pthread_join(t, NULL);
	}
}
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"
)

var failureHandlerOnce sync.Once

// installFailureHandler makes GDAL report failures of threads without a
// handler of their own to failures (see failureWatch); idempotent.
func installFailureHandler() { failureHandlerOnce.Do(func() { C.pnecInstallFailureHandler() }) }

func init() { installFailureHandler() }

// failureWatch notices GDAL failures reported off the calling thread (by
// GDAL's worker threads) since it was started. It is process-wide: in a
// process that writes several products at once (pnec batch --jobs N), a
// worker thread's failure fails every product being written then, which is
// safe (they are redone) where the alternative is a product that silently
// lost tiles.
type failureWatch struct{ start int64 }

// gdalFailure returns the number of failures reported so far and the
// message of failure i (from 0), "" when it is not kept (only the last few are).
func gdalFailure(i int64) (int64, string) {
	var buf [256]C.char
	n := C.pnecFailures(C.longlong(i), &buf[0], C.int(len(buf)))
	return int64(n), C.GoString(&buf[0])
}

func startFailureWatch() failureWatch {
	n, _ := gdalFailure(-1)
	return failureWatch{start: n}
}

// err is a *GDALError for the failures reported since the watch started
// (their distinct messages, as far as they are kept), else nil.
func (w failureWatch) err() error {
	n, _ := gdalFailure(-1)
	if n <= w.start {
		return nil
	}
	var msgs []string
	seen := map[string]bool{}
	for i := w.start; i < n; i++ {
		if _, m := gdalFailure(i); m != "" && !seen[m] {
			seen[m] = true
			msgs = append(msgs, m)
		}
	}
	msg := strings.Join(msgs, "; ")
	if msg == "" {
		msg = fmt.Sprintf("%d failures reported by GDAL worker threads", n-w.start)
	}
	return &GDALError{Code: 1, Msg: msg}
}

// emitFailureOffThread reports msg as a GDAL failure from a new native
// thread, as GDAL's worker threads do (for tests).
func emitFailureOffThread(msg string) {
	cm := C.CString(msg)
	defer C.free(unsafe.Pointer(cm))
	C.pnecEmitFailureOffThread(cm)
}
