package tempfiles

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
)

// TempSuffix marks WriteFile's temporaries: ".NAME" + TempSuffix + 8 hex
// digits, beside NAME, so that a later run can recognise and remove one left
// by a killed process.
const TempSuffix = Marker + "tmp-"

// WriteFile writes data to path atomically (WriteFunc).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return WriteFunc(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFunc writes path atomically with what write puts in it: to a
// temporary file beside path (recorded here, so that a stop on a signal
// removes it), synced, given perm, then renamed over path under Publish,
// so that nothing is published once a stop has begun. Readers see the old
// file or the new one, never a part; the temporary is removed when
// anything fails. It is pnec's one atomic write: WriteFile for bytes in
// memory, WriteFunc for a stream (a copy of a large file). The error is
// the cause alone; callers add which file it was for.
func WriteFunc(path string, perm os.FileMode, write func(io.Writer) error) error {
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+TempSuffix+hex.EncodeToString(rnd[:]))
	if err := Add(tmp); err != nil {
		return err
	}
	defer Forget(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	werr := write(f)
	serr := f.Sync()
	// perm exactly, not perm less the umask: the file replaces one that
	// readers (a web server, other users) already read.
	merr := f.Chmod(perm)
	cerr := f.Close()
	if err := errors.Join(werr, serr, merr, cerr); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := Publish(func() error { return os.Rename(tmp, path) }); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
