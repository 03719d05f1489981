package render

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// File names written into a run directory.
const (
	SummaryFile  = "summary.json"
	MarkdownFile = "report.md"
	HTMLFile     = "report.html"
	JUnitFile    = "junit.xml"
)

// Write renders every report file of d into dir (created if missing):
// report.md, report.html, junit.xml, one ClusterLoader2 PerfData file per
// policy with latency samples, and summary.json. It returns the names
// written, relative to dir.
//
// It is all or nothing: every file is rendered and written to a
// temporary name and fsynced first, and only when all of them are on disk
// are they renamed into place. An error (a disk full, an unwritable
// directory) leaves the previous reports untouched, so no file claims a
// result the others do not show.
func Write(dir string, d RunData) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	d = normalize(d)
	type file struct {
		name string
		data []byte
	}
	var files []file
	render := func(name string, fn func(*bytes.Buffer) error) error {
		var buf bytes.Buffer
		if err := fn(&buf); err != nil {
			return fmt.Errorf("render %s: %w", name, err)
		}
		files = append(files, file{name, buf.Bytes()})
		return nil
	}
	steps := []struct {
		name string
		fn   func(*bytes.Buffer) error
	}{
		{MarkdownFile, func(b *bytes.Buffer) error { return WriteMarkdown(b, d) }},
		{HTMLFile, func(b *bytes.Buffer) error { return WriteHTML(b, d) }},
		{JUnitFile, func(b *bytes.Buffer) error { return WriteJUnit(b, d) }},
	}
	for _, s := range steps {
		if err := render(s.name, s.fn); err != nil {
			return nil, err
		}
	}
	for _, f := range PerfDataFiles(d) {
		if err := render(f.Name, func(b *bytes.Buffer) error { return writeJSON(b, f.Data) }); err != nil {
			return nil, err
		}
	}
	if err := render(SummaryFile, func(b *bytes.Buffer) error { return WriteSummaryJSON(b, d) }); err != nil {
		return nil, err
	}
	tmps := make([]string, 0, len(files))
	cleanup := func() {
		for _, t := range tmps {
			os.Remove(t)
		}
	}
	for _, f := range files {
		tmp, err := writeTemp(filepath.Join(dir, f.name), f.data)
		if err != nil {
			cleanup()
			return nil, fmt.Errorf("write %s: %w", filepath.Join(dir, f.name), err)
		}
		tmps = append(tmps, tmp)
	}
	written := make([]string, 0, len(files))
	for i, f := range files {
		if err := os.Rename(tmps[i], filepath.Join(dir, f.name)); err != nil {
			cleanup()
			return written, err
		}
		written = append(written, f.name)
	}
	return written, nil
}

// writeTemp writes data to a fsynced temporary file beside path.
func writeTemp(path string, data []byte) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return "", err
	}
	fail := func(err error) (string, error) {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}
