package scenario

import (
	"regexp"
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
//
// The index is a tree: each key or sequence item is a node holding its
// parent's id and its own key, never its full path, so time and memory are
// linear in the file size whatever the nesting depth (a flat map of full
// paths costs depth² × key length: a 3.4 MB file of nested keys needed
// 1.7 GB). Paths are split only when looked up, for error messages.
type posIndex struct {
	file  string
	nodes []ixNode // nodes[0] is the root (the empty path)
	kids  map[childKey]int32
	// dups are mapping keys set twice under one parent, in file order.
	dups []ixDup
	// specials are scalar values YAML reads as NaN or an infinity, which
	// no scenario field accepts and JSON cannot carry.
	specials []ixScalar
	// aliases are the first alias uses (*name), in file order.
	aliases []ixScalar
}

type ixNode struct {
	parent    int32
	key       string // mapping key, or "[i]" for a sequence item
	line, col int32
}

type childKey struct {
	parent int32
	key    string
}

// ixDup is a mapping key that appears twice under one parent.
type ixDup struct {
	node      int32 // the first occurrence
	line, col int32 // the second one
}

// ixScalar is a scalar value of note at a node (its position is the value's).
type ixScalar struct {
	node      int32
	text      string
	line, col int32
}

// maxNoted bounds the duplicates, special floats and aliases remembered.
const maxNoted = 16

type frame struct {
	col  int
	seq  bool
	node int32
	idx  int
}

func newPosIndex(file string) *posIndex {
	return &posIndex{file: file, nodes: []ixNode{{parent: -1}}, kids: map[childKey]int32{}}
}

func indexYAML(file string, data []byte) *posIndex {
	ix := newPosIndex(file)
	src := string(data) // keys are substrings of src: one copy of the file
	var stack []frame
	type pending struct {
		node int32
		col  int
		key  bool // a mapping key: a sequence may start at the same column
	}
	var pend *pending
	blockCol := -1 // inside a block scalar whose key sits at this column
	for li, start := 0, 0; start < len(src); li++ {
		end := strings.IndexByte(src[start:], '\n')
		var line string
		if end < 0 {
			line, start = src[start:], len(src)
		} else {
			line, start = src[start:start+end], start+end+1
		}
		line = strings.TrimSuffix(line, "\r")
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
			stack, pend = stack[:0], nil
			continue
		}
		isDash := content == "-" || strings.HasPrefix(content, "- ")
		opened := false
		switch {
		case pend != nil && (ind > pend.col || (ind == pend.col && isDash && pend.key)):
			stack = append(stack, frame{col: ind, seq: isDash, node: pend.node, idx: -1})
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
			item := ix.add(top.node, "["+strconv.Itoa(top.idx)+"]", li+1, col+1)
			rest := content[1:]
			sp := 0
			for sp < len(rest) && rest[sp] == ' ' {
				sp++
			}
			rest = rest[sp:]
			col += 1 + sp
			if rest == "" || rest[0] == '#' {
				pend = &pending{node: item, col: ind}
				continue
			}
			if _, _, ok := splitKey(rest); !ok {
				ix.noteScalar(item, rest, li+1, col+1) // a scalar or flow item
				continue
			}
			stack = append(stack, frame{col: col, node: item, idx: -1})
			top = &stack[len(stack)-1]
			content = rest
		}
		key, val, ok := splitKey(content)
		if !ok {
			continue
		}
		kn := ix.add(top.node, key, li+1, col+1)
		v := strings.TrimLeft(val, " \t")
		vcol := col + 1 + (len(content) - len(v))
		if strings.HasPrefix(v, "&") { // anchor only
			if sp := strings.IndexByte(v, ' '); sp >= 0 {
				w := strings.TrimLeft(v[sp:], " \t")
				vcol += len(v) - len(w)
				v = w
			} else {
				v = ""
			}
		}
		switch {
		case v == "" || v[0] == '#':
			pend = &pending{node: kn, col: col, key: true}
		case v[0] == '|' || v[0] == '>':
			blockCol = col
		default:
			ix.noteScalar(kn, v, li+1, vcol)
		}
	}
	return ix
}

// add records a child of parent at line:col and returns its id. A mapping
// key already present under parent keeps its first position and is noted
// as a duplicate.
func (ix *posIndex) add(parent int32, key string, line, col int) int32 {
	ck := childKey{parent, key}
	if id, ok := ix.kids[ck]; ok {
		if !strings.HasPrefix(key, "[") && len(ix.dups) < maxNoted {
			ix.dups = append(ix.dups, ixDup{node: id, line: int32(line), col: int32(col)})
		}
		return id
	}
	id := int32(len(ix.nodes))
	ix.nodes = append(ix.nodes, ixNode{parent: parent, key: key, line: int32(line), col: int32(col)})
	ix.kids[ck] = id
	return id
}

// specialFloatRE matches the plain scalars YAML 1.1 reads as NaN or an
// infinity.
var specialFloatRE = regexp.MustCompile(`^(\.(nan|NaN|NAN)|[-+]?\.(inf|Inf|INF))$`)

// noteScalar remembers an inline value that YAML reads as NaN or an
// infinity, and the first alias uses, for error messages.
func (ix *posIndex) noteScalar(node int32, v string, line, col int) {
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	}
	v = strings.TrimRight(v, " \t")
	if specialFloatRE.MatchString(v) && len(ix.specials) < maxNoted {
		ix.specials = append(ix.specials, ixScalar{node: node, text: v, line: int32(line), col: int32(col)})
	}
	if a := aliasIndex(v); a >= 0 && len(ix.aliases) < maxNoted {
		ix.aliases = append(ix.aliases, ixScalar{node: node, text: v, line: int32(line), col: int32(col + a)})
	}
}

// aliasIndex returns the offset of the first alias (*name) in a plain or
// flow value, or -1.
func aliasIndex(v string) int {
	if v == "" || v[0] == '"' || v[0] == '\'' {
		return -1
	}
	for i := 0; i < len(v); i++ {
		if v[i] == '*' && (i == 0 || strings.IndexByte("[{, ", v[i-1]) >= 0) && i+1 < len(v) && v[i+1] != ' ' {
			return i
		}
	}
	return -1
}

// path returns the field path of node id.
func (ix *posIndex) path(id int32) string {
	var parts []string
	for ; id > 0; id = ix.nodes[id].parent {
		parts = append(parts, ix.nodes[id].key)
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		if b.Len() > 0 && !strings.HasPrefix(parts[i], "[") {
			b.WriteByte('.')
		}
		b.WriteString(parts[i])
	}
	return b.String()
}

// lastOnLine returns the last node indexed on a line, or 0.
func (ix *posIndex) lastOnLine(line int) int32 {
	for id := int32(len(ix.nodes)) - 1; id > 0; id-- {
		if int(ix.nodes[id].line) == line {
			return id
		}
	}
	return 0
}

func (ix *posIndex) posOf(id int32) pos {
	n := &ix.nodes[id]
	return pos{File: ix.file, Line: int(n.line), Col: int(n.col)}
}

// lookup returns the position of path or of its closest indexed ancestor.
func (ix *posIndex) lookup(path string) (pos, bool) {
	budget := 4096 // bounds the backtracking over keys that contain dots
	id, full := ix.walk(0, path, &budget)
	if id == 0 {
		return pos{File: ix.file}, false
	}
	return ix.posOf(id), full
}

// walk descends from node id along rest ("a.b[2].c", relative to id) and
// returns the deepest node reached and whether all of rest was matched. A
// mapping key may itself contain '.' or '[' (label keys such as
// app.kubernetes.io/name), so each separator is a candidate split; shorter
// keys are tried first.
func (ix *posIndex) walk(id int32, rest string, budget *int) (int32, bool) {
	if rest == "" {
		return id, true
	}
	best := id
	for _, i := range segmentEnds(rest) {
		if *budget--; *budget < 0 {
			break
		}
		kid, ok := ix.kids[childKey{id, rest[:i]}]
		if !ok {
			continue
		}
		got, full := ix.walk(kid, strings.TrimPrefix(rest[i:], "."), budget)
		if full {
			return got, true
		}
		if ix.depth(got) > ix.depth(best) {
			best = got
		}
	}
	return best, false
}

// segmentEnds returns the offsets where the first segment of a path may
// end: after "[i]" for an index, else before each '.' or '[' and at the end.
func segmentEnds(rest string) []int {
	if rest[0] == '[' {
		if j := strings.IndexByte(rest, ']'); j >= 0 {
			return []int{j + 1}
		}
		return nil
	}
	var out []int
	for i := 1; i < len(rest); i++ {
		if rest[i] == '.' || rest[i] == '[' {
			out = append(out, i)
		}
	}
	return append(out, len(rest))
}

func (ix *posIndex) depth(id int32) int {
	d := 0
	for ; id > 0; id = ix.nodes[id].parent {
		d++
	}
	return d
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
