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
//
// Only failures that can belong to a write are counted. GDAL 3.6's GTiff
// driver decodes the blocks of a read on worker threads too, each block in a
// scratch TIFF it names /vsimem/decompress_<address>.tif; a failure naming
// one is a read's, and the read's own result judges it (GDAL fails the
// RasterIO when a block cannot be decoded). Counting them failed every
// product written while a band-interleaved (PLANARCONFIG=SEPARATE) scene of
// 3 or more bands was read: GDAL 3.6 reports "Bad value N for ExtraSamples"
// for every block of it, and decodes the block correctly all the same.

static pthread_mutex_t pnecFailMu = PTHREAD_MUTEX_INITIALIZER;
static long long pnecFailCount;
#define PNEC_FAIL_RING 8
static char pnecFailMsg[PNEC_FAIL_RING][256];
static CPLErrorHandler pnecPrevHandler;
// pnecQuiet: counted failures are not passed on (nothing is printed): see
// QuietMessages. It replaces swapping the handler for GDAL's quiet one,
// which would drop the counting with the printing.
static volatile int pnecQuiet;
static void pnecSetQuiet(int q) { pnecQuiet = q; }

static int pnecIsReadFailure(const char *msg) {
	return msg != NULL && strstr(msg, "/vsimem/decompress_") != NULL;
}

static void CPL_STDCALL pnecFailureHandler(CPLErr cls, CPLErrorNum code, const char *msg) {
	if (cls >= CE_Failure && !pnecIsReadFailure(msg)) {
		pthread_mutex_lock(&pnecFailMu);
		char *slot = pnecFailMsg[pnecFailCount % PNEC_FAIL_RING];
		strncpy(slot, msg ? msg : "", 255);
		slot[255] = 0;
		pnecFailCount++;
		pthread_mutex_unlock(&pnecFailMu);
	}
	if (pnecQuiet) {
		return;
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
	"regexp"
	"strings"
	"sync"
	"unsafe"
)

var failureHandlerOnce sync.Once

// installFailureHandler makes GDAL report failures of threads without a
// handler of their own to failures (see failureWatch); idempotent.
func installFailureHandler() { failureHandlerOnce.Do(func() { C.pnecInstallFailureHandler() }) }

func init() { installFailureHandler() }

// quietFailureHandler makes the process-wide handler count failures without
// printing anything (QuietMessages).
func quietFailureHandler() {
	installFailureHandler()
	C.pnecSetQuiet(1)
}

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

// err is a *GDALError for the failures reported since the watch started,
// else nil: one line of their distinct messages (as far as they are kept),
// and how many there were when more than one.
func (w failureWatch) err() error {
	n, _ := gdalFailure(-1)
	if n <= w.start {
		return nil
	}
	var msgs []string
	seen := map[string]bool{}
	for i := w.start; i < n; i++ {
		_, m := gdalFailure(i)
		// GDAL's worker threads name their scratch files by address
		// (/vsimem/gtiff/thread/job/0x55d0...): one failure of every job
		// would otherwise be a line of its own.
		m = scratchAddress.ReplaceAllString(m, "0x…")
		if m != "" && !seen[m] {
			seen[m] = true
			msgs = append(msgs, m)
		}
	}
	msg := strings.Join(msgs, "; ")
	switch {
	case msg == "":
		msg = fmt.Sprintf("%d failures reported by GDAL worker threads", n-w.start)
	case n-w.start > 1:
		msg = fmt.Sprintf("%s (%d failures reported by GDAL worker threads)", msg, n-w.start)
	}
	return &GDALError{Code: 1, Msg: msg}
}

// scratchAddress is a hexadecimal address in a GDAL message.
var scratchAddress = regexp.MustCompile(`0x[0-9a-fA-F]+`)

// emitFailureOffThread reports msg as a GDAL failure from a new native
// thread, as GDAL's worker threads do (for tests).
func emitFailureOffThread(msg string) {
	cm := C.CString(msg)
	defer C.free(unsafe.Pointer(cm))
	C.pnecEmitFailureOffThread(cm)
}
