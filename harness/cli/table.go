package cli

import (
	"io"

	"github.com/sidebench/sidebench/reports/render"
)

// writeTable prints the result table (render.WriteResultTable): the
// runner's numbers, at most render.TableWidth columns wide.
func writeTable(w io.Writer, rows []render.StateRow) { render.WriteResultTable(w, rows) }

// fmtMs renders milliseconds as the result table does.
func fmtMs(v float64) string { return render.FmtDurationMs(v) }
