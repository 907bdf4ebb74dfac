package mapping

import "github.com/tidwall/gjson"

// SideEntry reports whether an entry of a CLI session file is no part of
// the main conversation as its user saw it: a subagent's (sidechain), a
// meta entry the CLI adds, a compaction summary, or one shown only in the
// transcript. Listings, replays and histories of a session leave these
// out.
func SideEntry(e gjson.Result) bool {
	return e.Get("isSidechain").Bool() || e.Get("isMeta").Bool() ||
		e.Get("isCompactSummary").Bool() || e.Get("isVisibleInTranscriptOnly").Bool()
}
