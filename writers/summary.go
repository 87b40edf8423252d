package writers

import (
	"encoding/json"
	"fmt"
)

// Summary counts what a run did. The invariant every command keeps:
// RowsIn == RowsOut + Rejected. Rows of a bad file read before the damage
// are in RowsIn (as output or rejected); rows after it cannot be counted
// and are covered by BadFiles instead.
type Summary struct {
	RowsIn   int64 `json:"rows_in"`
	RowsOut  int64 `json:"rows_out"`
	Rejected int64 `json:"rejected"`
	Files    int   `json:"files"`     // input files processed
	BadFiles int   `json:"bad_files"` // input files that could not be read (to the end)
}

// Add accumulates o into s.
func (s *Summary) Add(o Summary) {
	s.RowsIn += o.RowsIn
	s.RowsOut += o.RowsOut
	s.Rejected += o.Rejected
	s.Files += o.Files
	s.BadFiles += o.BadFiles
}

// Partial reports whether anything was rejected: such a run exits with the
// "partial" exit code.
func (s Summary) Partial() bool { return s.Rejected > 0 || s.BadFiles > 0 }

// Check verifies RowsIn == RowsOut + Rejected.
func (s Summary) Check() error {
	if s.RowsIn != s.RowsOut+s.Rejected {
		return fmt.Errorf("row accounting broken: rows_in %d != rows_out %d + rejected %d", s.RowsIn, s.RowsOut, s.Rejected)
	}
	return nil
}

// JSON returns the summary as one line of JSON.
func (s Summary) JSON() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// String is the human-readable form.
func (s Summary) String() string {
	return fmt.Sprintf("%d rows in, %d out, %d rejected; %d files, %d bad", s.RowsIn, s.RowsOut, s.Rejected, s.Files, s.BadFiles)
}
