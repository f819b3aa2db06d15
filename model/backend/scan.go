package backend

import (
	"bufio"
	"debug/elf"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Discovery only reads files: a PJRT plugin is loaded (dlopen'ed, its
// constructors run) only when a run opens the backend that names it or
// that the default rule picked, and no program is executed to find one:
// listing backends must not run a plugin's constructors. go-xla's own discovery (xla.GetAvailablePlugins)
// dlopens every candidate file of every folder on its search path, and
// python3 would have to run to print its site folders; both are replaced
// here by looking at names and ELF symbol tables.

// pluginPatterns are the file names go-xla takes for PJRT plugins, with
// the plugin's name as the first submatch.
var pluginPatterns = []*regexp.Regexp{
	regexp.MustCompile(`^pjrt_c_api_(.+)_plugin\.so$`),
	regexp.MustCompile(`^pjrt[-_]plugin[-_](.+)\.so$`),
}

// pluginFolders are the folders go-xla searches for plugins, in its order:
// PJRT_PLUGIN_LIBRARY_PATH when set, else ~/.local/lib/go-xla (and its
// nvidia/), /usr/local/lib/go-xla (and nvidia/), the older gomlx/pjrt
// folders, LD_LIBRARY_PATH's absolute entries and /etc/ld.so.conf's.
func pluginFolders() []string {
	if env, ok := os.LookupEnv("PJRT_PLUGIN_LIBRARY_PATH"); ok {
		var dirs []string
		for _, d := range strings.Split(env, ":") {
			if d != "" {
				dirs = append(dirs, d)
			}
		}
		return dirs
	}
	var dirs []string
	if home, err := os.UserHomeDir(); err == nil {
		g := filepath.Join(home, ".local", "lib", "go-xla")
		dirs = append(dirs, g, filepath.Join(g, "nvidia"), filepath.Join(home, ".local", "lib", "gomlx", "pjrt"))
	}
	dirs = append(dirs, "/usr/local/lib/go-xla", "/usr/local/lib/go-xla/nvidia", "/usr/local/lib/gomlx/pjrt")
	for _, d := range strings.Split(os.Getenv("LD_LIBRARY_PATH"), ":") {
		if filepath.IsAbs(d) {
			dirs = append(dirs, d)
		}
	}
	return ldConfFolders(dirs, "/etc/ld.so.conf", 0)
}

// ldConfFolders appends the folders an ld.so.conf file lists (following
// its include lines, at most 8 deep) to dirs.
func ldConfFolders(dirs []string, conf string, depth int) []string {
	if depth > 8 || !isRegular(conf) {
		return dirs
	}
	f, err := os.Open(conf)
	if err != nil {
		return dirs
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if inc, ok := strings.CutPrefix(line, "include"); ok && (strings.HasPrefix(inc, " ") || strings.HasPrefix(inc, "\t")) {
			pattern := strings.TrimSpace(inc)
			if !filepath.IsAbs(pattern) {
				pattern = filepath.Join(filepath.Dir(conf), pattern)
			}
			files, _ := filepath.Glob(pattern)
			for _, inc := range files {
				dirs = ldConfFolders(dirs, inc, depth+1)
			}
			continue
		}
		if filepath.IsAbs(line) {
			dirs = append(dirs, line)
		}
	}
	return dirs
}

// isRegular reports whether path names a regular file (after symlinks).
func isRegular(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// exportsPJRT reports whether path is a regular ELF shared library whose
// dynamic symbol table defines GetPjrtApi: read, never loaded.
func exportsPJRT(path string) bool {
	if !isRegular(path) {
		return false
	}
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return false
	}
	for _, s := range syms {
		if s.Name == "GetPjrtApi" && s.Section != elf.SHN_UNDEF && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			return true
		}
	}
	return false
}

// goXLAPlugins are the names of the plugins in pluginFolders, as go-xla
// names them ("cuda" for pjrt_c_api_cuda_plugin.so), the first file of a
// name winning: files whose names match and that export GetPjrtApi. A
// CUDA plugin on a machine without an NVIDIA GPU is left out, as go-xla
// does.
func goXLAPlugins() []string {
	names, _ := goXLAPluginFiles()
	return names
}

// goXLAPluginFile is the file goXLAPlugins took for the plugin name, ""
// when none.
func goXLAPluginFile(name string) string {
	names, files := goXLAPluginFiles()
	for i, n := range names {
		if n == name {
			return files[i]
		}
	}
	return ""
}

// goXLAPluginFiles are goXLAPlugins' names and the file of each.
func goXLAPluginFiles() (names, files []string) {
	seen := map[string]bool{}
	for _, dir := range pluginFolders() {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := pluginName(e.Name())
			if name == "" || seen[name] {
				continue
			}
			if pluginKind(name) == XLACUDA && !GPUPresent() {
				continue
			}
			if !exportsPJRT(filepath.Join(dir, e.Name())) {
				continue
			}
			seen[name] = true
			names = append(names, name)
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	return names, files
}

// pluginName is the plugin name a file name gives, "" when it is not a
// plugin's.
func pluginName(base string) string {
	for _, re := range pluginPatterns {
		if m := re.FindStringSubmatch(base); m != nil {
			return m[1]
		}
	}
	return ""
}

// pythonSites are the site-packages folders of the python3 found on PATH,
// worked out from where it lives rather than by running it: for its
// prefix (the folder above its bin/, both as found and with symlinks
// resolved, which covers virtual environments) lib/python3*/ and
// local/lib/python3*/ site-packages and dist-packages and Debian's
// lib/python3/dist-packages, then the user's ~/.local/lib/python3*/site-packages.
func pythonSites() []string {
	py := ""
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		if p := filepath.Join(d, "python3"); isRegular(p) {
			py = p
			break
		}
	}
	var prefixes []string
	if py != "" {
		prefixes = append(prefixes, filepath.Dir(filepath.Dir(py)))
		if real, err := filepath.EvalSymlinks(py); err == nil {
			prefixes = append(prefixes, filepath.Dir(filepath.Dir(real)))
		}
	}
	var dirs []string
	for _, p := range prefixes {
		for _, pattern := range []string{"lib/python3*/site-packages", "lib/python3*/dist-packages",
			"local/lib/python3*/dist-packages", "local/lib/python3*/site-packages", "lib/python3/dist-packages"} {
			m, _ := filepath.Glob(filepath.Join(p, pattern))
			dirs = append(dirs, m...)
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		m, _ := filepath.Glob(filepath.Join(home, ".local", "lib", "python3*", "site-packages"))
		dirs = append(dirs, m...)
	}
	return dirs
}
