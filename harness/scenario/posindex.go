package scenario

import (
	"strconv"
	"strings"
)

// pos is a position in a file (1-based line and column).
type pos struct {
	File      string
	Line, Col int
}

// posIndex maps field paths ("workloads[0].template.spec") to the position
// of their key (or sequence dash) in one YAML file.
//
// The module graph has no YAML library with a node API that the main module
// may import without changing go.mod, so this is a small scanner for YAML
// block style: block mappings, block sequences, block scalars (| and >),
// comments and document markers. Flow collections ({...}, [...]) are not
// descended into: their children resolve to the line of the key that holds
// them, which is where a reader looks anyway.
type posIndex struct {
	file string
	at   map[string]pos
}

type frame struct {
	col   int
	seq   bool
	path  string
	idx   int
	ident bool // a mapping frame opened inline after "- "
}

func indexYAML(file string, data []byte) *posIndex {
	ix := &posIndex{file: file, at: map[string]pos{}}
	lines := strings.Split(string(data), "\n")
	var stack []frame
	type pending struct {
		path string
		col  int
		key  bool // a mapping key: a sequence may start at the same column
	}
	var pend *pending
	blockCol := -1 // inside a block scalar whose key sits at this column
	for li, raw := range lines {
		line := strings.TrimRight(raw, "\r")
		ind := 0
		for ind < len(line) && line[ind] == ' ' {
			ind++
		}
		content := line[ind:]
		if blockCol >= 0 {
			if strings.TrimSpace(content) == "" || ind > blockCol {
				continue
			}
			blockCol = -1
		}
		if content == "" || content[0] == '#' {
			continue
		}
		if strings.HasPrefix(content, "---") || strings.HasPrefix(content, "...") || content[0] == '%' {
			stack, pend = nil, nil
			continue
		}
		isDash := content == "-" || strings.HasPrefix(content, "- ")
		var parent string
		opened := false
		switch {
		case pend != nil && (ind > pend.col || (ind == pend.col && isDash && pend.key)):
			parent = pend.path
			stack = append(stack, frame{col: ind, seq: isDash, path: parent, idx: -1})
			opened = true
		case len(stack) == 0:
			stack = append(stack, frame{col: ind, seq: isDash, idx: -1})
			opened = true
		}
		pend = nil
		if !opened {
			for len(stack) > 0 && stack[len(stack)-1].col > ind {
				stack = stack[:len(stack)-1]
			}
			// A block sequence may sit at its key's column ("key:\n- a"):
			// a mapping key at that column closes the sequence.
			if n := len(stack); n > 1 && !isDash && stack[n-1].seq && stack[n-1].col == ind && stack[n-2].col == ind {
				stack = stack[:n-1]
			}
			if len(stack) == 0 || stack[len(stack)-1].col != ind {
				continue // a continuation line or something we do not index
			}
		}
		top := &stack[len(stack)-1]
		if top.seq != isDash {
			continue
		}
		col := ind
		if isDash {
			top.idx++
			item := top.path + "[" + strconv.Itoa(top.idx) + "]"
			ix.set(item, li+1, col+1)
			rest := strings.TrimPrefix(content, "-")
			sp := 0
			for sp < len(rest) && rest[sp] == ' ' {
				sp++
			}
			rest = rest[sp:]
			col += 1 + sp
			if rest == "" || rest[0] == '#' {
				pend = &pending{path: item, col: ind}
				continue
			}
			key, val, ok := splitKey(rest)
			if !ok {
				continue // a scalar or flow item
			}
			stack = append(stack, frame{col: col, path: item, idx: -1, ident: true})
			top = &stack[len(stack)-1]
			content = rest
			_ = key
			_ = val
		}
		key, val, ok := splitKey(content)
		if !ok {
			continue
		}
		kp := key
		if top.path != "" {
			kp = top.path + "." + key
		}
		ix.set(kp, li+1, col+1)
		v := strings.TrimSpace(val)
		if strings.HasPrefix(v, "&") { // anchor only
			if sp := strings.IndexByte(v, ' '); sp >= 0 {
				v = strings.TrimSpace(v[sp:])
			} else {
				v = ""
			}
		}
		switch {
		case v == "" || v[0] == '#':
			pend = &pending{path: kp, col: col, key: true}
		case v[0] == '|' || v[0] == '>':
			blockCol = col
		}
	}
	return ix
}

func (ix *posIndex) set(path string, line, col int) {
	if _, ok := ix.at[path]; !ok {
		ix.at[path] = pos{File: ix.file, Line: line, Col: col}
	}
}

// lookup returns the position of path or of its closest indexed ancestor.
func (ix *posIndex) lookup(path string) (pos, bool) {
	for {
		if p, ok := ix.at[path]; ok {
			return p, true
		}
		if path == "" {
			return pos{File: ix.file}, false
		}
		path = parentPath(path)
	}
}

// parentPath strips the last element of a field path.
func parentPath(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexAny(p, ".["); i >= 0 {
		return p[:i]
	}
	return ""
}

// splitKey splits "key: value" (plain, single- or double-quoted key).
func splitKey(s string) (key, val string, ok bool) {
	if s == "" {
		return "", "", false
	}
	switch s[0] {
	case '"', '\'':
		q := s[0]
		end := -1
		for i := 1; i < len(s); i++ {
			if s[i] == '\\' && q == '"' {
				i++
				continue
			}
			if s[i] == q {
				if q == '\'' && i+1 < len(s) && s[i+1] == '\'' {
					i++
					continue
				}
				end = i
				break
			}
		}
		if end < 0 || end+1 >= len(s) || s[end+1] != ':' {
			return "", "", false
		}
		k := s[1:end]
		if q == '"' {
			if uq, err := strconv.Unquote(s[:end+1]); err == nil {
				k = uq
			}
		} else {
			k = strings.ReplaceAll(k, "''", "'")
		}
		rest := s[end+2:]
		if rest != "" && rest[0] != ' ' {
			return "", "", false
		}
		return k, rest, true
	case '{', '[', '?', '&', '*', '!', '|', '>', '@', '`':
		return "", "", false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t') {
			return strings.TrimRight(s[:i], " \t"), s[i+1:], true
		}
		if s[i] == ' ' && i+1 < len(s) && s[i+1] == '#' {
			return "", "", false
		}
	}
	return "", "", false
}
