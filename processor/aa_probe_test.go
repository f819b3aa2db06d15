package processor

import (
	"fmt"
	"os"
	"strings"
	"time"
)

func init() {
	if os.Getenv("PNEC_PROBE") == "" || os.Getenv(benchChildEnv) == "" {
		return
	}
	t0 := time.Now()
	f, _ := os.Create(fmt.Sprintf("%s/probe-%d.log", os.Getenv("PNEC_PROBE"), os.Getpid()))
	go func() {
		for {
			b, _ := os.ReadFile("/proc/self/status")
			var rss string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "VmRSS:") {
					rss = strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:"))
				}
			}
			fmt.Fprintf(f, "PROBE %6.2fs %s\n", time.Since(t0).Seconds(), rss)
			time.Sleep(100 * time.Millisecond)
		}
	}()
}
