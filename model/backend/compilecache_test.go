package backend

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// resetCompileCache forgets the process's cache (tests use several).
func resetCompileCache(t *testing.T) {
	t.Helper()
	cacheMu.Lock()
	cacheInUse, cachePrivate = nil, ""
	cacheMu.Unlock()
	t.Cleanup(func() {
		cacheMu.Lock()
		cacheInUse, cachePrivate = nil, ""
		cacheMu.Unlock()
	})
}

// TestCompileCacheKey: the folder changes with everything a compiled
// kernel depends on beside its graph (plugin file, device, options, flags
// that change code), and not with path-only flags.
func TestCompileCacheKey(t *testing.T) {
	root := t.TempDir()
	t.Setenv(CacheDirEnv, root)
	t.Setenv("XLA_FLAGS", "")
	proc := t.TempDir()
	old := nvidiaProcDir
	nvidiaProcDir = proc
	defer func() { nvidiaProcDir = old }()
	gpu := func(model string) {
		d := filepath.Join(proc, "gpus", "0000:00:01.0")
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "information"), []byte("Model: \t "+model+"\nIRQ: 1\n"), 0o644)
		os.WriteFile(filepath.Join(proc, "version"), []byte("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04\nGCC\n"), 0o644)
	}
	gpu("NVIDIA H100 80GB HBM3")
	plugin := filepath.Join(t.TempDir(), "xla_cuda_plugin.so")
	os.WriteFile(plugin, []byte("v1"), 0o644)
	b, _ := Parse("xla:" + plugin)
	dir := func() string {
		c, err := b.CompileCache()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(c.Dir, filepath.Join(root, "xla", "xla-cuda-")) {
			t.Fatalf("folder %s not under %s", c.Dir, root)
		}
		return c.Dir
	}
	base := dir()
	c, _ := b.CompileCache()
	if len(c.Key.Devices) != 1 || c.Key.Devices[0] != "NVIDIA H100 80GB HBM3" || !strings.Contains(c.Key.Driver, "580.159.04") {
		t.Errorf("key %+v: device or driver not read from %s", c.Key, proc)
	}
	t.Setenv("XLA_FLAGS", "--xla_gpu_cuda_data_dir=/a --xla_dump_to=/tmp/x")
	if dir() != base {
		t.Error("a path-only XLA flag changed the folder")
	}
	for name, change := range map[string]func(){
		"code flag": func() { t.Setenv("XLA_FLAGS", "--xla_gpu_autotune_level=0") },
		"options":   func() { b, _ = Parse("xla:" + plugin + ",tf32") },
		"device":    func() { gpu("NVIDIA H200") },
		"plugin": func() {
			os.WriteFile(plugin, []byte("v2, a new build"), 0o644)
			os.Chtimes(plugin, time.Now(), time.Now().Add(time.Hour))
		},
	} {
		before := dir()
		change()
		if dir() == before {
			t.Errorf("%s change kept the folder %s", name, before)
		}
	}
}

// TestCompileCacheKernelsShared: each process gives XLA its own copy of
// the shared kernel cache and publishes a larger one back whole; readers
// never see a half-written file while writers publish at once.
func TestCompileCacheKernelsShared(t *testing.T) {
	resetCompileCache(t)
	t.Setenv(CacheDirEnv, t.TempDir())
	t.Setenv("XLA_FLAGS", "--xla_gpu_autotune_level=4")
	t.Setenv(KernelCacheEnv, "")
	b, _ := Parse("xla:/nonexistent/xla_cuda_plugin.so")
	c, err := useCompileCache(b)
	if err != nil {
		t.Fatal(err)
	}
	flags := os.Getenv("XLA_FLAGS")
	for _, want := range []string{"--xla_gpu_autotune_level=4", "--xla_gpu_per_fusion_autotune_cache_dir=" + c.AutotuneDir,
		"--xla_gpu_kernel_cache_file=" + cachePrivate, "--xla_gpu_enable_llvm_module_compilation_parallelism=true"} {
		if !strings.Contains(flags, want) {
			t.Errorf("XLA_FLAGS %q lacks %q", flags, want)
		}
	}
	if fi, err := os.Stat(c.AutotuneDir); err != nil || !fi.IsDir() {
		t.Errorf("autotune folder: %v", err)
	}
	// XLA appends to the private copy; publishing makes it the shared one.
	os.WriteFile(cachePrivate, []byte("kernels A"), 0o644)
	if err := PublishCompileCache(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(c.KernelFile); string(got) != "kernels A" {
		t.Errorf("shared kernels %q after publish", got)
	}
	// A smaller private copy (another process published more) does not
	// replace the shared file.
	os.WriteFile(cachePrivate, []byte("A"), 0o644)
	PublishCompileCache()
	if got, _ := os.ReadFile(c.KernelFile); string(got) != "kernels A" {
		t.Errorf("shared kernels %q: replaced by a smaller copy", got)
	}
	// Many publishers and readers at once: every read is one whole version.
	// Every version is in the map before the readers start: they read it
	// while the loop would still be adding to it.
	var wg sync.WaitGroup
	versions := map[string]bool{"kernels A": true}
	var mu sync.Mutex
	version := func(i int) string {
		return fmt.Sprintf("kernels of process %d %s", i, strings.Repeat("x", 1<<16*(i+1)))
	}
	for i := range 8 {
		versions[version(i)] = true
	}
	for i := range 8 {
		v := version(i)
		wg.Go(func() {
			p := filepath.Join(c.Dir, "tmp", fmt.Sprintf("kernels-w%d.bin", i))
			os.WriteFile(p, []byte(v), 0o644)
			tmp := p + ".publish"
			copyFile(p, tmp)
			l := c.lock()
			l.Lock()
			os.Rename(tmp, c.KernelFile)
			l.Unlock()
		})
		wg.Go(func() {
			p, err := c.privateKernels()
			if err != nil {
				t.Error(err)
				return
			}
			got, _ := os.ReadFile(p)
			mu.Lock()
			defer mu.Unlock()
			if !versions[string(got)] && len(got) > 0 {
				t.Errorf("a reader saw %d bytes that are no published version", len(got))
			}
		})
	}
	wg.Wait()
}

// TestCompileCacheStaleCopies: copies left by processes that are gone are
// removed; this process's and live ones stay.
func TestCompileCacheStaleCopies(t *testing.T) {
	tmp := t.TempDir()
	mine := filepath.Join(tmp, fmt.Sprintf("kernels-%d.bin", os.Getpid()))
	gone := filepath.Join(tmp, "kernels-999999999.bin")
	live := filepath.Join(tmp, "kernels-1.bin") // init runs as long as the machine
	for _, p := range []string{mine, gone, live} {
		os.WriteFile(p, []byte("k"), 0o644)
	}
	removeStaleCopies(tmp)
	for p, want := range map[string]bool{mine: true, gone: false, live: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}

// TestCacheFolders: `pnec backends` sees each folder's key, size and
// entries.
func TestCacheFolders(t *testing.T) {
	resetCompileCache(t)
	root := t.TempDir()
	t.Setenv(CacheDirEnv, root)
	t.Setenv("XLA_FLAGS", "")
	b, _ := Parse("xla:/x/xla_cuda_plugin.so")
	c, err := useCompileCache(b)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(c.AutotuneDir, "abc.textproto"), []byte("result"), 0o644)
	os.WriteFile(c.KernelFile, []byte("0123456789"), 0o644)
	if b.CacheWarm() {
		t.Error("warm before any graph was compiled")
	}
	b.GraphMark("graph1")
	if !b.CacheWarm() {
		t.Error("not warm after a graph was compiled through it")
	}
	gotRoot, folders, err := CacheFolders()
	if err != nil {
		t.Fatal(err)
	}
	if gotRoot != root || len(folders) != 1 {
		t.Fatalf("root %s, %d folders", gotRoot, len(folders))
	}
	f := folders[0]
	if f.Autotune != 1 || f.KernelBytes != 10 || f.Graphs != 1 || f.Key.Backend != b.Config() || f.Bytes < 16 {
		t.Errorf("folder %+v", f)
	}
}

// within runs f and fails the test when it has not returned in 10 s (a
// read blocked on a FIFO), leaving it blocked.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still blocked after 10 s", what)
	}
}

// TestCompileCacheDistrusted: the cache's files are
// read only when they are regular files within a bound: a FIFO named
// KEY.json hung `pnec backends` (CacheFolders), one named kernels.bin or
// an autotuning entry would hang the run that points XLA at the cache,
// and a 3 GB KEY.json was read whole. Listing now skips such a key, and
// using the cache refuses it with an error naming the file (the run goes
// on without the cache).
func TestCompileCacheDistrusted(t *testing.T) {
	t.Setenv("XLA_FLAGS", "")
	b, _ := Parse("xla:/x/xla_cuda_plugin.so")
	setup := func(t *testing.T) CompileCache {
		resetCompileCache(t)
		t.Setenv(CacheDirEnv, t.TempDir())
		c, err := useCompileCache(b)
		if err != nil {
			t.Fatal(err)
		}
		resetCompileCache(t)
		return c
	}
	fifo := func(t *testing.T, p string) {
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skip("no FIFOs here:", err)
		}
	}
	t.Run("KEY.json a FIFO", func(t *testing.T) {
		c := setup(t)
		fifo(t, filepath.Join(c.Dir, cacheKeyFile))
		within(t, "CacheFolders", func() {
			if _, folders, err := CacheFolders(); err != nil || len(folders) != 1 {
				t.Errorf("CacheFolders: %v, %d folders", err, len(folders))
			}
		})
	})
	t.Run("KEY.json of 3 GB", func(t *testing.T) {
		c := setup(t)
		if err := os.Truncate(filepath.Join(c.Dir, cacheKeyFile), 3<<30); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		CacheFolders()
		runtime.ReadMemStats(&after)
		if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
			t.Errorf("listing allocated %d MiB: the key was read whole", grown>>20)
		}
	})
	for _, name := range []string{"kernels.bin", "autotune/x.textproto"} {
		t.Run(name+" a FIFO", func(t *testing.T) {
			c := setup(t)
			fifo(t, filepath.Join(c.Dir, name))
			within(t, "useCompileCache", func() {
				if _, err := useCompileCache(b); err == nil || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("useCompileCache: %v, want a refusal naming %s", err, name)
				}
			})
		})
	}
}

// TestCacheRootSettings: the folder a program configures wins over
// PNEC_CACHE_DIR, which wins over the XDG folder; Configure with no
// folder gives the environment its say again.
func TestCacheRootSettings(t *testing.T) {
	env, set := t.TempDir(), t.TempDir()
	t.Setenv(CacheDirEnv, env)
	t.Cleanup(func() { Configure(Settings{}) })
	if got, err := CacheRoot(); err != nil || got != env {
		t.Errorf("PNEC_CACHE_DIR alone: %q, %v; want %q", got, err, env)
	}
	Configure(Settings{CacheDir: set})
	if got, err := CacheRoot(); err != nil || got != set {
		t.Errorf("configured and PNEC_CACHE_DIR: %q, %v; want the configured %q", got, err, set)
	}
	Configure(Settings{})
	if got, err := CacheRoot(); err != nil || got != env {
		t.Errorf("configured back to none: %q, %v; want PNEC_CACHE_DIR's %q", got, err, env)
	}
}
