package buffers

import "testing"

func TestResize(t *testing.T) {
	b := make([]float32, 4, 10)
	b[0] = 7
	if got := Resize(b, 8); len(got) != 8 || cap(got) != 10 || got[0] != 7 || &got[0] != &b[0] {
		t.Errorf("within capacity: len %d cap %d, want the same array resliced to 8", len(got), cap(got))
	}
	if got := Resize(b, 11); len(got) != 11 || &got[0] == &b[0] || got[0] != 0 {
		t.Errorf("beyond capacity: len %d, want a new zeroed slice of 11", len(got))
	}
	if got := Resize([]bool(nil), 0); got == nil && len(got) != 0 {
		t.Errorf("nil to 0: %v", got)
	}
}
