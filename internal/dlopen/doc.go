// Package dlopen loads shared libraries into the process by path, so that
// later lookups of their sonames (by a PJRT plugin's own dlopen calls, or a
// library's dependencies) find the copies already loaded: what jax does
// for the NVIDIA libraries of its pip-installed CUDA plugin, since the
// dynamic loader reads LD_LIBRARY_PATH only when a process starts.
package dlopen
