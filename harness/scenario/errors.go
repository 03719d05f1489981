package scenario

import (
	"fmt"
	"sort"
	"strings"
)

// FieldError is one problem in a scenario file: where (file, line, column,
// field path) and what (Msg, which says what is allowed and, for a typo,
// the closest valid name).
type FieldError struct {
	File string
	Line int // 0 if unknown
	Col  int
	// Path is the field path, e.g. "workloads[0].template.spec.initContainers[1]".
	Path string
	Msg  string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is every problem found in a scenario, sorted by file position.
type ErrorList []*FieldError

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

func (l ErrorList) sort() {
	sort.SliceStable(l, func(i, j int) bool {
		if l[i].File != l[j].File {
			return l[i].File < l[j].File
		}
		if l[i].Line != l[j].Line {
			return l[i].Line < l[j].Line
		}
		return l[i].Col < l[j].Col
	})
}

// errs collects FieldErrors, resolving paths to positions.
type errs struct {
	res  resolver
	list ErrorList
	seen map[string]bool
}

func (e *errs) add(path, format string, args ...any) {
	p := e.res.lookup(path)
	fe := &FieldError{File: p.File, Line: p.Line, Col: p.Col, Path: path, Msg: fmt.Sprintf(format, args...)}
	key := fe.Error()
	if e.seen == nil {
		e.seen = map[string]bool{}
	}
	if e.seen[key] || len(e.list) >= maxErrors {
		return
	}
	e.seen[key] = true
	e.list = append(e.list, fe)
}

func (e *errs) err() error {
	if len(e.list) == 0 {
		return nil
	}
	e.list.sort()
	return e.list
}

// maxErrors bounds the errors reported for one file.
const maxErrors = 50

// unknownName formats "unknown X "name" (allowed: ...); did you mean "y"?".
func unknownName(what, name string, allowed []string) string {
	msg := fmt.Sprintf("unknown %s %q (allowed: %s)", what, name, strings.Join(allowed, ", "))
	if s := Suggest(name, allowed); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return msg
}
