package worker

// Approvals: an agent's approval prompt, recognised on its screen by its
// profile's forms, goes to the controller as a control.worker.approval
// line (status "open": what is asked, and the choices); a lane-000 input
// whose content names one of the choices (its number, its key or its
// label) presses that choice's key, and is acked ok once the prompt has
// left the screen. When the prompt is gone, however it was answered, a
// second line says so (status "closed"). docs/protocol/control.md,
// "Approvals".

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ccbridge/ccbridge/mapping/lane000"
)

// approval is an approval prompt on the screen.
type approval struct {
	id   string
	form *ApprovalForm
	// question is the prompt's first row, text the rows after it up to
	// the first choice (trimmed, empty ones left out).
	question string
	text     []string
	command  string
	file     string
	choices  []lane000.ApprovalChoice
	// answer is the lane's input that picked a choice, waiting for the
	// prompt to leave the screen; chosen is that choice. seenAt is when
	// the prompt appeared; keyAt when its key is (next) pressed, zero
	// once pressed ptyCRTries times; keys counts the presses.
	answer *ptyInput
	chosen *lane000.ApprovalChoice
	seenAt time.Time
	keyAt  time.Time
	keys   int
}

// approvalSettle is how long a prompt must have shown before its key is
// pressed: a TUI that has just drawn its prompt may not read keys for it
// yet (Claude Code's drops a key sent at once). A key the prompt did not
// take (still on the screen ptyCRRetry later) is pressed again, as a lost
// carriage return is sent again.
const approvalSettle = 300 * time.Millisecond

// same reports whether a is the prompt b shows (one prompt stays one
// approval while the screen redraws around it).
func (a *approval) same(b *approval) bool {
	return a.form == b.form && a.question == b.question && a.command == b.command && a.file == b.file &&
		slices.Equal(a.choices, b.choices)
}

// frame are the characters a TUI draws around and before a prompt's
// rows: box borders, selection marks.
const frame = " │┃║|›❯>●○◉•*-─━═╭╮╰╯┌┐└┘"

// findApproval looks for one of the forms' prompts on the screen: the
// question row, then the numbered choices below it (at least two). Nil
// when none shows.
func findApproval(forms []ApprovalForm, rows []string) *approval {
	for i := range forms {
		f := &forms[i]
		for at, r := range rows {
			q := strings.Trim(r, frame)
			if !strings.HasPrefix(q, f.Question) {
				continue
			}
			a := &approval{form: f, question: q}
			if f.Above && !a.above(rows[:at]) {
				continue
			}
			if f.FileInQuestion {
				a.file = strings.TrimSuffix(strings.TrimPrefix(q, f.Question), "?")
			}
			for _, d := range rows[at+1:] {
				line := strings.Trim(d, frame)
				if c, ok := parseChoice(line); ok && (len(a.choices) == 0 || c.N == a.choices[len(a.choices)-1].N+1) {
					a.choices = append(a.choices, c)
					continue
				}
				if len(a.choices) > 0 {
					break // the choices are over
				}
				if line == "" || f.Above {
					continue
				}
				a.text = append(a.text, line)
				a.named(line)
			}
			if len(a.choices) >= 2 && a.choices[0].N == 1 {
				return a
			}
		}
	}
	return nil
}

// above takes the prompt's details from the rows above its question, back
// to the rule that opens it: false when there is none, or the first
// detail is not the form's header.
func (a *approval) above(rows []string) bool {
	f := a.form
	from := -1
	for i := len(rows) - 1; i >= 0; i-- {
		if f.Top == "" && rule(rows[i], '─') {
			from = i + 1
			break
		}
		if f.Top != "" && strings.HasPrefix(strings.Trim(rows[i], frame), f.Top) {
			from = i
			break
		}
	}
	if from < 0 {
		return false
	}
	dashed := 0
	for _, r := range rows[from:] {
		if rule(r, '╌') {
			dashed++
			continue
		}
		line := strings.Trim(r, frame)
		if line == "" {
			continue
		}
		a.text = append(a.text, line)
		if f.Boxed && dashed == 1 && a.command == "" {
			a.command = line
		}
		a.named(line)
	}
	return f.Header == "" || (len(a.text) > 0 && strings.HasPrefix(a.text[0], f.Header))
}

// named takes the command or the file from a detail row that names it.
func (a *approval) named(line string) {
	f := a.form
	if f.Command != "" && a.command == "" && strings.HasPrefix(line, f.Command) {
		a.command = strings.TrimSpace(strings.TrimPrefix(line, f.Command))
	}
	if f.File != "" && a.file == "" && strings.HasPrefix(line, f.File) {
		file := strings.TrimPrefix(line, f.File)
		if f.FileEnd != "" {
			file, _, _ = strings.Cut(file, f.FileEnd)
		}
		a.file = strings.TrimSpace(file)
	}
}

// rule reports whether row is a rule of c: that character alone (and
// spaces), at least three of it.
func rule(row string, c rune) bool {
	n := 0
	for _, r := range row {
		switch r {
		case c:
			n++
		case ' ':
		default:
			return false
		}
	}
	return n >= 3
}

// parseChoice reads a choice's row: "1. Yes, proceed (y)" is choice 1,
// label "Yes, proceed", key "y"; "2. Allow always" has the key "2".
func parseChoice(line string) (lane000.ApprovalChoice, bool) {
	dot := strings.IndexByte(line, '.')
	if dot < 1 || dot > 2 || dot+1 >= len(line) || line[dot+1] != ' ' {
		return lane000.ApprovalChoice{}, false
	}
	n, err := strconv.Atoi(line[:dot])
	if err != nil || n < 1 {
		return lane000.ApprovalChoice{}, false
	}
	c := lane000.ApprovalChoice{N: n, Label: strings.TrimSpace(line[dot+2:]), Key: line[:dot]}
	if strings.HasSuffix(c.Label, ")") {
		if open := strings.LastIndexByte(c.Label, '('); open > 0 {
			if k := c.Label[open+1 : len(c.Label)-1]; k == "esc" || (len(k) == 1 && k[0] > ' ' && k[0] < 0x7f) {
				c.Key, c.Label = k, strings.TrimSpace(c.Label[:open])
			}
		}
	}
	if c.Label == "" {
		return lane000.ApprovalChoice{}, false
	}
	return c, true
}

// choice is the choice content names: its number, else its key, else its
// label (letter case and surrounding spaces aside), the first that fits
// in that order ("2" is choice 2 even when another's key is 2).
func (a *approval) choice(content []byte) (*lane000.ApprovalChoice, bool) {
	s := strings.TrimSpace(string(content))
	for _, fits := range []func(c *lane000.ApprovalChoice) bool{
		func(c *lane000.ApprovalChoice) bool { return s == strconv.Itoa(c.N) },
		func(c *lane000.ApprovalChoice) bool { return strings.EqualFold(s, c.Key) },
		func(c *lane000.ApprovalChoice) bool { return strings.EqualFold(s, c.Label) },
	} {
		for i := range a.choices {
			if fits(&a.choices[i]) {
				return &a.choices[i], true
			}
		}
	}
	return nil, false
}

// keyBytes are what pressing a choice's key writes.
func keyBytes(key string) []byte {
	if key == "esc" {
		return []byte{0x1b}
	}
	return []byte(key)
}

// choiceList names the choices for a refusal's detail: "1 (y) Yes,
// proceed; 2 (a) …".
func (a *approval) choiceList() string {
	var b strings.Builder
	for i, c := range a.choices {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strconv.Itoa(c.N))
		if c.Key != strconv.Itoa(c.N) {
			b.WriteString(" (" + c.Key + ")")
		}
		b.WriteString(" " + c.Label)
	}
	return b.String()
}

// line is the approval as lane 000's record of it.
func (a *approval) line(status string) lane000.Approval {
	l := lane000.Approval{ID: a.id, Status: status, Kind: a.form.Kind, Question: a.question, Text: a.text,
		Command: a.command, File: a.file, Choices: a.choices}
	if status == lane000.ApprovalClosed {
		l.Chosen = a.chosen
	}
	return l
}

// approvals looks for an approval prompt on the screen (rows; nil once
// the program is gone): a new one is sent open, one that left is sent
// closed, and the input that chose it is acked.
func (w *ptyWorker) approvals(rows []string, now time.Time) {
	var found *approval
	if rows != nil {
		found = findApproval(w.prof.Approvals, rows)
	}
	a := w.appr
	if a != nil && found != nil && a.same(found) {
		if !slices.Equal(a.choices, found.choices) || !slices.Equal(a.text, found.text) {
			a.text, a.choices = found.text, found.choices // redrawn: said again, under its id
			w.sendApproval(a, lane000.ApprovalOpen, now)
		}
		return
	}
	if a != nil {
		w.appr = nil
		w.sendApproval(a, lane000.ApprovalClosed, now)
		if in := a.answer; in != nil {
			in.done(lane000.OK, "the agent took choice "+strconv.Itoa(a.chosen.N)+" ("+a.chosen.Label+"): its approval prompt left the screen")
		}
	}
	if found != nil {
		w.apprN++
		found.id = "approval-" + strconv.Itoa(w.apprN)
		found.seenAt = now
		w.appr = found
		w.sendApproval(found, lane000.ApprovalOpen, now)
	}
}

func (w *ptyWorker) sendApproval(a *approval, status string, now time.Time) {
	l := a.line(status)
	w.out = append(w.out, w.worker.AppendApproval(nil, &l, now))
}

// answer takes an input while an approval prompt shows: one of its
// choices presses that choice's key, acked once the prompt has left the
// screen (or timeout); anything else is busy, naming the choices.
func (w *ptyWorker) answer(text []byte, done func(lane000.Result, string)) {
	a := w.appr
	if a.answer != nil {
		done(lane000.Busy, "the approval prompt was answered already (choice "+strconv.Itoa(a.chosen.N)+"); waiting for the agent to take it")
		return
	}
	c, ok := a.choice(text)
	if !ok {
		done(lane000.Busy, "an approval prompt is open ("+a.question+"): answer with one of its choices: "+a.choiceList())
		return
	}
	p := w.child()
	if p == nil {
		done(lane000.NotLive, "the program is not running")
		return
	}
	now := w.loop.Now()
	a.chosen, a.keys = c, 0
	a.answer = &ptyInput{done: done, giveUp: now.Add(w.cfg.ControlTimeout)}
	a.keyAt = a.seenAt.Add(approvalSettle)
	if !now.Before(a.keyAt) {
		w.press(a, now)
	}
}

// press presses the chosen key, and sets when to press it again.
func (w *ptyWorker) press(a *approval, now time.Time) {
	p := w.child()
	if p == nil || a.answer == nil {
		return
	}
	if a.keys >= ptyCRTries {
		a.keyAt = time.Time{} // the lane's timeout decides
		return
	}
	if a.keys > 0 {
		w.log.Info("pty worker: the approval prompt did not take its key; pressing it again", "try", a.keys+1)
	}
	a.keys++
	p.Write(keyBytes(a.chosen.Key))
	a.keyAt = now.Add(ptyCRRetry)
}
