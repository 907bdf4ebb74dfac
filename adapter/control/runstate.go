package control

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// RunState is what lane 001 keeps of a run across restarts (--state-dir):
// a paused run stays paused, and its iteration count and escalation go on.
type RunState struct {
	RunID            string    `json:"run_id"`
	Paused           bool      `json:"paused"`
	Iter             int       `json:"iter"`
	Model            string    `json:"model,omitempty"`
	EscalationReason string    `json:"escalation_reason,omitempty"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// RunFile is where the state of run runID is kept under dir: one small
// JSON file per run, named by a hash of the id (any text is a valid run
// id; a file name is not).
func RunFile(dir, runID string) string {
	sum := sha256.Sum256([]byte(runID))
	return filepath.Join(dir, "runs", hex.EncodeToString(sum[:12])+".json")
}

// LoadRun reads the state of a run from path; a missing file is the zero
// state (not paused) and no error. A file of another run id (a hash
// collision) counts as missing.
func LoadRun(path, runID string) (RunState, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return RunState{RunID: runID}, nil
	}
	if err != nil {
		return RunState{RunID: runID}, fmt.Errorf("run state %s: %w", path, err)
	}
	st, err := decodeRun(b, runID)
	if err != nil {
		return st, fmt.Errorf("run state %s: not a run state file (move it aside to start afresh): %w", path, err)
	}
	return st, nil
}

// decodeRun reads a kept run state; one of another run id (a hash
// collision) is the zero state of runID.
func decodeRun(b []byte, runID string) (RunState, error) {
	var st RunState
	if err := json.Unmarshal(b, &st); err != nil {
		return RunState{RunID: runID}, err
	}
	if st.RunID != runID {
		return RunState{RunID: runID}, nil
	}
	return st, nil
}

// busRunKey is run runID's key in the runs bucket.
func busRunKey(runID string) string { return "_" + busKeyPart(runID) }

// SaveRun writes st to path atomically (a new file renamed over the old
// one, synced first), so that a crash leaves either state, never half of
// one. The folder is made (0700) when missing; the file is 0600.
func SaveRun(path string, st RunState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("run state: %w", err)
	}
	f, err := os.CreateTemp(dir, ".run-*")
	if err != nil {
		return fmt.Errorf("run state: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("run state %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // the rename itself; best effort
		d.Close()
	}
	return nil
}
