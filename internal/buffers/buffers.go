// Package buffers holds the one helper the readers of geo and processor
// share for reusing scratch buffers between reads.
package buffers

// Resize is buf resliced to n elements when its capacity allows, else a
// new slice of n (zeroed) elements. A resliced buffer keeps its old
// contents: callers overwrite what they use.
func Resize[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}
