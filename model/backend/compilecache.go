package backend

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/gofrs/flock"

	"github.com/pnec/pnec/internal/tempfiles"
)

// CacheDirEnv moves pnec's cache folder (default: the XDG cache folder,
// $XDG_CACHE_HOME/pnec or ~/.cache/pnec).
const CacheDirEnv = "PNEC_CACHE_DIR"

// KernelCacheEnv set to 0 turns XLA's compiled-kernel cache off (the
// autotuning cache stays on).
const KernelCacheEnv = "PNEC_XLA_KERNEL_CACHE"

// cacheFormat is the layout version of the compile cache: a change in how
// pnec fills it starts new folders.
const cacheFormat = 1

// Settings are what a program tells the backends instead of setting
// environment variables for them (Configure).
type Settings struct {
	// CacheDir is pnec's cache folder (the compile cache lives in it);
	// "" leaves it to PNEC_CACHE_DIR, else the XDG cache folder's pnec/.
	CacheDir string
	// XLAQuickCompile turns XLA's GPU autotuning off for a process that
	// trains (xlaTrainingAutotuneFlag), unless XLA_FLAGS already picks an
	// autotune level.
	XLAQuickCompile bool
	// XLAQuiet keeps the INFO and WARNING lines (glog/absl) an XLA PJRT
	// plugin prints when it loads off stderr (TF_CPP_MIN_LOG_LEVEL=2),
	// unless TF_CPP_MIN_LOG_LEVEL is set.
	XLAQuiet bool
}

// settings are the Settings Configure was given.
var settings struct {
	sync.Mutex
	Settings
}

// Configure sets what the backends use from now on (pnec backends
// --cache-dir sets CacheDir); a backend already open keeps what it had.
func Configure(s Settings) {
	settings.Lock()
	defer settings.Unlock()
	settings.Settings = s
}

// CurrentSettings are the Settings Configure was last given.
func CurrentSettings() Settings {
	settings.Lock()
	defer settings.Unlock()
	return settings.Settings
}

// CacheRoot is pnec's cache folder: Settings.CacheDir, else
// PNEC_CACHE_DIR (the environment, read here and nowhere else), else the
// XDG cache folder's pnec/.
func CacheRoot() (string, error) {
	settings.Lock()
	dir := settings.CacheDir
	settings.Unlock()
	if dir != "" {
		return filepath.Abs(dir)
	}
	if d := os.Getenv(CacheDirEnv); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cache folder: %w (set %s)", err, CacheDirEnv)
	}
	return filepath.Join(d, "pnec"), nil
}

// CacheKey is everything a compiled kernel or an autotuning result depends
// on beside the graph itself: XLA leaves version checks to its user
// (--xla_gpu_per_fusion_autotune_cache_dir), so the plugin (its file and
// size and time), the device and driver, the backend options and the XLA
// flags that change code name the folder, and any change of them starts a
// new one. The graph is in XLA's own keys (a fusion's HLO); a model whose
// graph changes adds entries, never reuses another's.
type CacheKey struct {
	Format     int      `json:"format"`
	Backend    string   `json:"backend"` // Backend.Config
	Plugin     string   `json:"plugin"`
	PluginSize int64    `json:"plugin_size"`
	PluginTime string   `json:"plugin_mtime"`
	Devices    []string `json:"devices"`
	Driver     string   `json:"driver"`
	XLAFlags   []string `json:"xla_flags"` // those that change code, sorted
}

// Hash is the key's folder name part.
func (k CacheKey) Hash() string {
	b, _ := json.Marshal(k)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// CompileCache is the cache folder of one backend on this machine.
type CompileCache struct {
	Dir string   `json:"dir"`
	Key CacheKey `json:"key"`
	// AutotuneDir is XLA's per-fusion autotuning cache
	// (--xla_gpu_per_fusion_autotune_cache_dir; XLA writes each entry to a
	// temporary file and renames it, so processes share it safely).
	AutotuneDir string `json:"autotune_dir"`
	// KernelFile is the shared compiled-kernel cache
	// (--xla_gpu_kernel_cache_file). XLA rewrites that file in place and
	// fails a compilation on a file it cannot parse, so each process gives
	// XLA a private copy and publishes it back by rename under a lock
	// (PublishCompileCache): a reader never sees half a file; of two processes
	// publishing at once the later wins, and the kernels only the other
	// compiled are compiled again by a later run.
	KernelFile string `json:"kernel_file"`
}

// pathFlags are XLA flags that name files or folders, or how the caches are
// used, not what code is made: left out of CacheKey (as jax's cache_key.py
// leaves them out of its keys). Splitting modules for parallel compilation
// is what the kernel cache needs, and pnec sets it with the cache: it is
// part of using the cache.
var pathFlags = []string{"xla_gpu_cuda_data_dir", "xla_gpu_per_fusion_autotune_cache_dir", "xla_gpu_kernel_cache_file",
	"xla_gpu_experimental_autotune_cache_mode", "xla_dump", "xla_gpu_dump", "xla_gpu_enable_llvm_module_compilation_parallelism"}

// codeFlags are the tokens of XLA_FLAGS that change code, sorted.
func codeFlags(flags string) []string {
	var out []string
	for _, f := range strings.Fields(flags) {
		name := strings.TrimLeft(f, "-")
		if slices.ContainsFunc(pathFlags, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// nvidiaProcDir is where the NVIDIA driver describes its GPUs (tests point it elsewhere).
var nvidiaProcDir = "/proc/driver/nvidia"

// gpuModels are the GPUs' model names and the driver's version line, as
// the NVIDIA driver reports them in /proc (no library or command needed).
func gpuModels() (models []string, driver string) {
	infos, _ := filepath.Glob(filepath.Join(nvidiaProcDir, "gpus", "*", "information"))
	for _, p := range infos {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Model:"); ok {
				models = append(models, strings.TrimSpace(v))
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(nvidiaProcDir, "version")); err == nil {
		driver, _, _ = strings.Cut(string(b), "\n")
		driver = strings.TrimSpace(driver)
	}
	return models, driver
}

// CompileCache is b's cache folder for the current XLA_FLAGS; nothing is
// created. The Go backend compiles in milliseconds and has none.
func (b Backend) CompileCache() (CompileCache, error) {
	if b.Kind == Go {
		return CompileCache{}, errors.New("the go backend keeps no compile cache")
	}
	root, err := CacheRoot()
	if err != nil {
		return CompileCache{}, err
	}
	k := CacheKey{Format: cacheFormat, Backend: b.Config(), Plugin: b.Plugin, XLAFlags: codeFlags(os.Getenv("XLA_FLAGS"))}
	if fi, err := os.Stat(b.Plugin); err == nil {
		k.PluginSize, k.PluginTime = fi.Size(), fi.ModTime().UTC().Format("2006-01-02T15:04:05.000000000Z")
	}
	if b.Kind == XLACUDA {
		k.Devices, k.Driver = gpuModels()
	}
	dir := filepath.Join(root, "xla", string(b.Kind)+"-"+k.Hash())
	return CompileCache{Dir: dir, Key: k, AutotuneDir: filepath.Join(dir, "autotune"),
		KernelFile: filepath.Join(dir, "kernels.bin")}, nil
}

// cacheKeyFile is the key beside the entries, for people and `pnec backends`.
const cacheKeyFile = "KEY.json"

// useCompileCache points XLA's caches at b's folder, once per process:
// it creates the folder and its key, adds the cache flags to XLA_FLAGS
// (which XLA reads when its first client starts) unless the user set
// them, and copies the shared kernel cache for this process.
func useCompileCache(b Backend) (CompileCache, error) {
	if !b.OnDevice() {
		return CompileCache{}, nil // XLA's caches are for its GPU compiler
	}
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if cacheInUse != nil {
		return *cacheInUse, nil
	}
	c, err := b.CompileCache()
	if err != nil {
		return c, err
	}
	if err := os.MkdirAll(c.AutotuneDir, 0o755); err != nil {
		return c, fmt.Errorf("compile cache: %w", err)
	}
	if err := checkCacheEntries(c.Dir); err != nil {
		return c, fmt.Errorf("compile cache: %w", err)
	}
	if err := tempfiles.WriteFile(filepath.Join(c.Dir, cacheKeyFile), mustJSON(c.Key), cacheFileMode); err != nil {
		return c, fmt.Errorf("compile cache: %w", err)
	}
	flags := os.Getenv("XLA_FLAGS")
	if !strings.Contains(flags, "xla_gpu_per_fusion_autotune_cache_dir") {
		flags += " --xla_gpu_per_fusion_autotune_cache_dir=" + c.AutotuneDir
	}
	if os.Getenv(KernelCacheEnv) != "0" && !strings.Contains(flags, "xla_gpu_kernel_cache_file") {
		private, err := c.privateKernels()
		if err != nil {
			return c, err
		}
		// XLA reads and extends the kernel cache only when it compiles a
		// module in parts (gpu_compiler.cc: UseCache).
		flags += " --xla_gpu_kernel_cache_file=" + private
		if !strings.Contains(flags, "xla_gpu_enable_llvm_module_compilation_parallelism") {
			flags += " --xla_gpu_enable_llvm_module_compilation_parallelism=true"
		}
		cachePrivate = private
	}
	os.Setenv("XLA_FLAGS", strings.TrimSpace(flags))
	cacheInUse = &c
	return c, nil
}

var (
	cacheMu      sync.Mutex
	cacheInUse   *CompileCache
	cachePrivate string // this process's copy of the kernel cache
)

func mustJSON(v any) []byte {
	b, _ := json.MarshalIndent(v, "", "  ")
	return append(b, '\n')
}

// lock is the cache folder's lock file (gofrs/flock: flock(2)).
func (c CompileCache) lock() *flock.Flock { return flock.New(filepath.Join(c.Dir, ".lock")) }

// privateKernels copies the shared kernel cache, under the folder's shared
// lock, to a file of this process (tmp/kernels-PID.bin) and returns its
// path; copies left by processes that are gone are removed first.
func (c CompileCache) privateKernels() (string, error) {
	tmp := filepath.Join(c.Dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", fmt.Errorf("compile cache: %w", err)
	}
	removeStaleCopies(tmp)
	private := filepath.Join(tmp, fmt.Sprintf("kernels-%d.bin", os.Getpid()))
	l := c.lock()
	if err := l.RLock(); err != nil {
		return "", fmt.Errorf("compile cache: lock: %w", err)
	}
	defer l.Unlock()
	if err := checkCacheFile(c.KernelFile, maxKernelCacheBytes); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return private, nil
		}
		return "", fmt.Errorf("compile cache: %w", err)
	}
	if err := copyFile(c.KernelFile, private); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("compile cache: %w", err)
	}
	return private, nil
}

// Bounds of the compile cache's files: the key, XLA's autotuning entries
// (a few KiB each) and the shared kernel cache (megabytes for pnec's
// networks). A file above them, or one that is not a regular file (a FIFO
// would block the reader), is no entry pnec or XLA wrote: the cache is
// then left off for the run, with a message naming it: a FIFO named
// KEY.json hung `pnec backends`, and a 3 GB one was read whole.
const (
	maxCacheKeyBytes    = 64 << 10
	maxCacheEntryBytes  = 64 << 20
	maxKernelCacheBytes = 2 << 30
)

// checkCacheFile refuses path unless it is a regular file (not followed
// through a link) of at most limit bytes; a missing file is fs.ErrNotExist.
func checkCacheFile(path string, limit int64) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s): not a cache entry", path, fi.Mode().Type())
	}
	if fi.Size() > limit {
		return fmt.Errorf("%s holds %d bytes, above the %d a cache entry may hold", path, fi.Size(), limit)
	}
	return nil
}

// readCacheFile reads the cache file path after checkCacheFile, reading
// at most limit bytes whatever it grew to since.
func readCacheFile(path string, limit int64) ([]byte, error) {
	if err := checkCacheFile(path, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// checkCacheEntries checks every file of the cache folder dir with
// checkCacheFile (the kernel cache with its own bound), before XLA is
// pointed at it.
func checkCacheEntries(dir string) error {
	return filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			return nil
		}
		limit := int64(maxCacheEntryBytes)
		// A kernel cache, or the temporary of one being written
		// (".kernels.bin.pnec-tmp-..." beside it, tempfiles.WriteFunc).
		name := strings.TrimPrefix(filepath.Base(p), ".")
		if strings.HasPrefix(name, "kernels.bin") || strings.HasPrefix(name, "kernels-") {
			limit = maxKernelCacheBytes
		}
		return checkCacheFile(p, limit)
	})
}

// removeStaleCopies removes the private kernel copies of processes that no
// longer run.
func removeStaleCopies(tmp string) {
	m, _ := filepath.Glob(filepath.Join(tmp, "kernels-*.bin*"))
	for _, p := range m {
		pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "kernels-"), filepath.Ext(p)))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, fs.ErrNotExist) {
			os.Remove(p)
		}
	}
}

// PublishCompileCache gives the kernels this process compiled to the next
// ones: when its private kernel cache grew past the shared one (XLA only
// adds to it), it replaces the shared file by rename under the folder's
// exclusive lock. Predictors and training call it when they close.
func PublishCompileCache() error {
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if cacheInUse == nil || cachePrivate == "" {
		return nil
	}
	c := *cacheInUse
	pfi, err := os.Stat(cachePrivate)
	if err != nil || pfi.Size() == 0 {
		return nil // nothing compiled in parts yet
	}
	l := c.lock()
	if err := l.Lock(); err != nil {
		return fmt.Errorf("compile cache: lock: %w", err)
	}
	defer l.Unlock()
	if sfi, err := os.Stat(c.KernelFile); err == nil && sfi.Size() >= pfi.Size() {
		return nil
	}
	if err := copyFile(cachePrivate, c.KernelFile); err != nil {
		return fmt.Errorf("compile cache: %w", err)
	}
	return nil
}

// cacheFileMode is the mode of the files pnec writes in the compile cache
// (the key, graph marks, kernel caches): its user's alone.
const cacheFileMode = 0o600

// copyFile copies src to dst atomically (tempfiles.WriteFunc): a
// concurrent job reads the old dst or the new one, never a part of either.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return tempfiles.WriteFunc(dst, cacheFileMode, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}

// CacheFolder is one backend's compile cache as `pnec backends` shows it.
type CacheFolder struct {
	Dir string   `json:"dir"`
	Key CacheKey `json:"key"`
	// Bytes and Files count everything in the folder; Autotune is XLA's
	// autotuning entries (one per fused kernel), KernelBytes the shared
	// kernel cache's size, Graphs the graphs pnec compiled through it
	// (model graph and input shape).
	Bytes       int64 `json:"bytes"`
	Files       int   `json:"files"`
	Autotune    int   `json:"autotune_entries"`
	KernelBytes int64 `json:"kernel_cache_bytes"`
	Graphs      int   `json:"graphs"`
}

// CacheFolders lists the compile caches under CacheRoot (none: an empty list).
func CacheFolders() (root string, out []CacheFolder, err error) {
	root, err = CacheRoot()
	if err != nil {
		return "", nil, err
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "xla", "*"))
	for _, d := range dirs {
		f := CacheFolder{Dir: d}
		if b, err := readCacheFile(filepath.Join(d, cacheKeyFile), maxCacheKeyBytes); err == nil {
			json.Unmarshal(b, &f.Key)
		}
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return nil
			}
			if fi, err := e.Info(); err == nil {
				f.Bytes += fi.Size()
			}
			f.Files++
			switch filepath.Base(filepath.Dir(p)) {
			case "autotune":
				f.Autotune++
			case "graphs":
				f.Graphs++
			}
			return nil
		})
		if fi, err := os.Stat(filepath.Join(d, "kernels.bin")); err == nil {
			f.KernelBytes = fi.Size()
		}
		out = append(out, f)
	}
	return root, out, nil
}

// GraphMark records that the graph named key (a model graph and input
// shape, graphKey) was compiled through b's cache, so that a later job's
// decision can count on a warm cache (Job.Warm).
func (b Backend) GraphMark(key string) {
	cacheMu.Lock()
	c := cacheInUse
	cacheMu.Unlock()
	if c == nil {
		return
	}
	dir := filepath.Join(c.Dir, "graphs")
	if os.MkdirAll(dir, 0o755) == nil {
		tempfiles.WriteFile(filepath.Join(dir, key), nil, cacheFileMode)
	}
}

// CacheWarm reports whether b's cache folder for the current flags holds a
// graph pnec compiled.
func (b Backend) CacheWarm() bool {
	c, err := b.CompileCache()
	if err != nil {
		return false
	}
	m, _ := filepath.Glob(filepath.Join(c.Dir, "graphs", "*"))
	return len(m) > 0
}
