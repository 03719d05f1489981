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
// summary.json, report.md, report.html, junit.xml and one ClusterLoader2
// PerfData file per policy with latency samples. It returns the names
// written, relative to dir, in the order written. Each file is written to
// a temporary name and renamed, so a reader never sees half a file.
func Write(dir string, d RunData) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	d = normalize(d)
	var written []string
	put := func(name string, render func(*bytes.Buffer) error) error {
		var buf bytes.Buffer
		if err := render(&buf); err != nil {
			return fmt.Errorf("render %s: %w", name, err)
		}
		if err := writeFileAtomic(filepath.Join(dir, name), buf.Bytes()); err != nil {
			return err
		}
		written = append(written, name)
		return nil
	}
	steps := []struct {
		name string
		fn   func(*bytes.Buffer) error
	}{
		{SummaryFile, func(b *bytes.Buffer) error { return WriteSummaryJSON(b, d) }},
		{MarkdownFile, func(b *bytes.Buffer) error { return WriteMarkdown(b, d) }},
		{HTMLFile, func(b *bytes.Buffer) error { return WriteHTML(b, d) }},
		{JUnitFile, func(b *bytes.Buffer) error { return WriteJUnit(b, d) }},
	}
	for _, s := range steps {
		if err := put(s.name, s.fn); err != nil {
			return written, err
		}
	}
	for _, f := range PerfDataFiles(d) {
		if err := put(f.Name, func(b *bytes.Buffer) error { return writeJSON(b, f.Data) }); err != nil {
			return written, err
		}
	}
	return written, nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
