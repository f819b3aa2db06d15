// Package regular opens the files pnec reads itself (model files, STAC
// Collections, class-names files, MATLAB files) only when they are regular
// files: a FIFO, a device or a socket given in their place would block the
// read until killed, or never end. The file is opened without blocking and
// checked on the descriptor (so that it cannot be swapped between a check
// and the open), and refused with ErrNotRegular naming what it is. A
// directory passes, for the read to report it as before. The datasets pnec
// hands GDAL follow the same rule through geo.CheckOpenable.
package regular

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is a file pnec would read that is a FIFO, a device or a
// socket.
var ErrNotRegular = errors.New("not a regular file")

// Open opens path for reading when it is a regular file (or a directory).
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if m := fi.Mode(); !m.IsRegular() && !m.IsDir() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: %s", ErrNotRegular, Kind(m))}
	}
	return f, nil
}

// ReadFile is os.ReadFile through Open.
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Kind names a file mode that is not a regular file's in words.
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "a special file"
}

// Check refuses a path that exists and is neither a regular file nor a
// directory, for readers that open the file themselves (the MAT reader,
// GDAL); a missing file is left to them to report.
func Check(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if m := fi.Mode(); !m.IsRegular() && !m.IsDir() {
		return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: %s", ErrNotRegular, Kind(m))}
	}
	return nil
}
