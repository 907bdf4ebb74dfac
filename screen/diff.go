package screen

// Row is one row of a screen: its index and its text.
type Row struct {
	N    int
	Text string
}

// Diff returns the rows of now that differ from before (index and text), for
// notifications of what changed. A row of now beyond the end of before
// counts as changed; rows of before beyond the end of now are not reported.
func Diff(before, now []string) []Row {
	var out []Row
	for i, s := range now {
		if i >= len(before) || before[i] != s {
			out = append(out, Row{N: i, Text: s})
		}
	}
	return out
}
