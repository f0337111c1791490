package helm

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// errFallback means the fast decoder met YAML it does not handle (anchors,
// tags, multi-line plain or quoted scalars, flow mappings, tabs, control
// characters, a type that does not fit a field, ...). The caller then decodes
// with yaml.v3, which also produces the error messages. The fast decoder is
// therefore never the one that refuses a document: it either yields exactly
// what yaml.v3 would or gives up. FuzzParseHelmIndex checks that.
var errFallback = errors.New("not in the fast YAML subset")

// ynode is a YAML node of the block subset the fast decoder reads: far
// smaller than yaml.Node, and its strings are slices of the input.
type ynode struct {
	kind  byte   // 's' scalar, 'm' mapping, 'q' sequence
	plain bool   // a plain (unquoted) scalar, whose type YAML resolves
	str   string // scalar text
	kids  []ynode
}

// isNull reports whether a node is YAML null: ~, null or nothing, unquoted.
func (n *ynode) isNull() bool {
	return n.kind == 's' && n.plain && isNullText(n.str)
}

func isNullText(s string) bool {
	return s == "" || s == "~" || s == "null" || s == "Null" || s == "NULL"
}

// fastParser reads the block subset of YAML line by line.
type fastParser struct {
	src string
	pos int // start of the next unread line
	// cur is the current line once peeked: its indentation and the byte
	// range of its content (after the indentation, without the newline).
	cur    struct{ indent, start, end int }
	hasCur bool
}

// fastText reports whether data holds only printable characters, newlines
// and spaces: no tabs, carriage returns, BOM, control characters or invalid
// UTF-8, and no document markers or directives.
func fastText(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n') || c == 0x7f {
				return false
			}
			if (c == '-' || c == '.' || c == '%') && (i == 0 || s[i-1] == '\n') {
				if c == '%' || strings.HasPrefix(s[i:], "---") || strings.HasPrefix(s[i:], "...") {
					return false
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || (r >= 0x80 && r <= 0x9f) || r == 0xfeff || r == 0x2028 || r == 0x2029 || (r >= 0xd800 && r <= 0xdfff) || r == 0xfffe || r == 0xffff {
			return false
		}
		i += size
	}
	return true
}

// peek makes the next line with content (not blank, not a comment) the
// current one. It returns false at the end of input.
func (p *fastParser) peek() bool {
	if p.hasCur {
		return true
	}
	for p.pos < len(p.src) {
		start := p.pos
		end := strings.IndexByte(p.src[start:], '\n')
		if end < 0 {
			end = len(p.src)
			p.pos = end
		} else {
			end += start
			p.pos = end + 1
		}
		i := start
		for i < end && p.src[i] == ' ' {
			i++
		}
		if i == end || p.src[i] == '#' {
			continue
		}
		p.cur.indent, p.cur.start, p.cur.end = i-start, i, end
		p.hasCur = true
		return true
	}
	return false
}

// line returns the current line's content.
func (p *fastParser) line() string { return p.src[p.cur.start:p.cur.end] }

// block parses the mapping or sequence that starts at the current line,
// indented by indent.
func (p *fastParser) block(indent int) (ynode, error) {
	if isSeqItem(p.line()) {
		return p.seq(indent)
	}
	return p.mapping(indent)
}

func isSeqItem(l string) bool { return l == "-" || strings.HasPrefix(l, "- ") }

// mapping parses "key: value" lines at exactly indent.
func (p *fastParser) mapping(indent int) (ynode, error) {
	n := ynode{kind: 'm'}
	var seen map[string]bool
	for p.peek() && p.cur.indent == indent {
		l := p.line()
		if isSeqItem(l) {
			break
		}
		key, rest, err := splitKey(l)
		if err != nil {
			return n, err
		}
		// Duplicate keys are an error for yaml.v3; let it say so.
		if len(n.kids) < 16 {
			for i := 0; i < len(n.kids); i += 2 {
				if n.kids[i].str == key.str {
					return n, errFallback
				}
			}
		} else {
			if seen == nil {
				seen = make(map[string]bool, len(n.kids))
				for i := 0; i < len(n.kids); i += 2 {
					seen[n.kids[i].str] = true
				}
			}
			if seen[key.str] {
				return n, errFallback
			}
			seen[key.str] = true
		}
		p.hasCur = false
		value, err := p.value(indent, rest, true)
		if err != nil {
			return n, err
		}
		n.kids = append(n.kids, key, value)
	}
	if p.hasCur && p.cur.indent > indent {
		return n, errFallback
	}
	return n, nil
}

// seq parses "- item" lines at exactly indent.
func (p *fastParser) seq(indent int) (ynode, error) {
	return p.seqEach(indent, nil)
}

// seqEach parses "- item" lines at exactly indent. With each set, it hands
// every item to each instead of keeping it, so a long list of entries is
// never held as a tree.
func (p *fastParser) seqEach(indent int, each func(*ynode) error) (ynode, error) {
	n := ynode{kind: 'q'}
	add := func(item ynode) error {
		if each != nil {
			return each(&item)
		}
		n.kids = append(n.kids, item)
		return nil
	}
	for p.peek() && p.cur.indent == indent && isSeqItem(p.line()) {
		l := p.line()
		rest := strings.TrimLeft(l[1:], " ")
		if rest == "" || rest[0] == '#' {
			p.hasCur = false
			item, err := p.nested(indent, false)
			if err != nil {
				return n, err
			}
			if err := add(item); err != nil {
				return n, err
			}
			continue
		}
		col := p.cur.indent + (len(l) - len(rest))
		if isSeqItem(rest) || isMappingLine(rest) {
			// A compact collection: "- key: v" continues at the column of key.
			p.cur.indent, p.cur.start = col, p.cur.end-len(rest)
			item, err := p.block(col)
			if err != nil {
				return n, err
			}
			if err := add(item); err != nil {
				return n, err
			}
			continue
		}
		p.hasCur = false
		item, err := p.value(indent, rest, false)
		if err != nil {
			return n, err
		}
		if err := add(item); err != nil {
			return n, err
		}
	}
	if p.hasCur && p.cur.indent > indent {
		return n, errFallback
	}
	return n, nil
}

// nested parses what follows a "key:" or "-" with nothing after it: a block
// on the next lines, or null.
func (p *fastParser) nested(indent int, inMapping bool) (ynode, error) {
	if !p.peek() {
		return ynode{kind: 's', plain: true}, nil
	}
	if p.cur.indent > indent {
		return p.block(p.cur.indent)
	}
	// "key:" followed by "- item" at the key's own indentation.
	if inMapping && p.cur.indent == indent && isSeqItem(p.line()) {
		return p.seq(indent)
	}
	return ynode{kind: 's', plain: true}, nil
}

// value parses the text after "key: " or "- " on a line already consumed;
// indent is that of the mapping or sequence it belongs to.
func (p *fastParser) value(indent int, rest string, inMapping bool) (ynode, error) {
	if rest == "" || rest[0] == '#' {
		return p.nested(indent, inMapping)
	}
	var n ynode
	var err error
	switch rest[0] {
	case '|', '>':
		return p.blockScalar(indent, rest)
	case '"', '\'':
		var tail string
		n, tail, err = quoted(rest)
		if err == nil && !onlyComment(tail) {
			err = errFallback
		}
	case '[':
		n, err = flowSeq(rest)
	case '{':
		n, err = ynode{kind: 'm'}, nil
		if !onlyComment(strings.TrimPrefix(rest, "{}")) || !strings.HasPrefix(rest, "{}") {
			err = errFallback
		}
	default:
		n, err = plainScalar(rest)
		if err == nil && !strings.Contains(rest, " #") {
			n.str, err = p.plainContinuation(indent, n.str)
		}
	}
	if err != nil {
		return n, err
	}
	// A more indented line after a scalar would continue it (a multi-line
	// scalar): leave that to yaml.v3.
	if p.peek() && p.cur.indent > indent {
		return n, errFallback
	}
	return n, nil
}

// plainContinuation reads the lines that continue a plain scalar (YAML
// writers wrap long strings at 80 columns): each is folded into a space, an
// empty line into a line break.
func (p *fastParser) plainContinuation(indent int, first string) (string, error) {
	var b strings.Builder
	blanks := 0
	for p.pos < len(p.src) {
		start := p.pos
		end := strings.IndexByte(p.src[start:], '\n')
		next := len(p.src)
		if end < 0 {
			end = len(p.src)
		} else {
			end += start
			next = end + 1
		}
		l := p.src[start:end]
		t := strings.TrimLeft(l, " ")
		if t == "" {
			blanks++
			p.pos = next
			continue
		}
		if len(l)-len(t) <= indent || t[0] == '#' {
			p.pos = start
			break
		}
		t = strings.TrimRight(t, " ")
		if strings.Contains(t, ": ") || strings.Contains(t, " #") || strings.HasSuffix(t, ":") || isSeqItem(t) {
			return "", errFallback
		}
		if b.Len() == 0 {
			b.WriteString(first)
		}
		if blanks == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteString(strings.Repeat("\n", blanks))
		}
		b.WriteString(t)
		blanks = 0
		p.pos = next
	}
	if b.Len() == 0 {
		return first, nil
	}
	return b.String(), nil
}

// isMappingLine reports whether l starts with "key:" (plain or quoted key).
func isMappingLine(l string) bool {
	_, _, err := splitKey(l)
	return err == nil
}

// splitKey splits "key: rest" into the key and rest.
func splitKey(l string) (ynode, string, error) {
	var key ynode
	var after string
	if l[0] == '"' || l[0] == '\'' {
		var err error
		if key, after, err = quoted(l); err != nil {
			return key, "", err
		}
		after = strings.TrimLeft(after, " ")
		if !strings.HasPrefix(after, ":") {
			return key, "", errFallback
		}
		after = after[1:]
	} else {
		i := strings.Index(l, ":")
		for i >= 0 && i+1 < len(l) && l[i+1] != ' ' {
			j := strings.Index(l[i+1:], ":")
			if j < 0 {
				i = -1
				break
			}
			i += 1 + j
		}
		if i <= 0 {
			return key, "", errFallback
		}
		text := strings.TrimRight(l[:i], " ")
		if strings.Contains(text, " #") || !plainStart(text) || text == "<<" || isNullText(text) {
			return key, "", errFallback
		}
		key = ynode{kind: 's', plain: true, str: text}
		after = l[i+1:]
	}
	if after != "" && after[0] != ' ' {
		return key, "", errFallback
	}
	return key, strings.TrimLeft(after, " "), nil
}

// plainStart reports whether a plain scalar may start like s in block
// context without being something else (an indicator, a tag, an anchor).
func plainStart(s string) bool {
	if s == "" {
		return false
	}
	switch s[0] {
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	case '-', '?', ':':
		return len(s) > 1 && s[1] != ' '
	}
	return true
}

// plainScalar reads a one-line plain scalar, dropping a trailing comment.
func plainScalar(rest string) (ynode, error) {
	if i := strings.Index(rest, " #"); i >= 0 {
		rest = rest[:i]
	}
	rest = strings.TrimRight(rest, " ")
	if !plainStart(rest) || strings.Contains(rest, ": ") || strings.HasSuffix(rest, ":") {
		return ynode{}, errFallback
	}
	return ynode{kind: 's', plain: true, str: rest}, nil
}

// onlyComment reports whether the rest of a line after a value is nothing
// or a comment (which needs a space before its #).
func onlyComment(s string) bool {
	if s == "" {
		return true
	}
	t := strings.TrimLeft(s, " ")
	return s[0] == ' ' && (t == "" || t[0] == '#')
}

// quoted reads a single- or double-quoted scalar that ends on this line and
// returns the text after it.
func quoted(s string) (ynode, string, error) {
	q := s[0]
	if q == '\'' {
		for i := 1; i < len(s); i++ {
			if s[i] != '\'' {
				continue
			}
			if i+1 < len(s) && s[i+1] == '\'' {
				return quotedSingleSlow(s) // rare: '' inside
			}
			return ynode{kind: 's', str: s[1:i]}, s[i+1:], nil
		}
		return ynode{}, "", errFallback
	}
	var b []byte
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			text := s[1:i]
			if b != nil {
				text = string(b)
			}
			return ynode{kind: 's', str: text}, s[i+1:], nil
		case '\\':
			if b == nil {
				b = append(make([]byte, 0, len(s)), s[1:i]...)
			}
			if i+1 >= len(s) {
				return ynode{}, "", errFallback
			}
			i++
			switch s[i] {
			case '"', '\\', '/':
				b = append(b, s[i])
			case 'n':
				b = append(b, '\n')
			case 't':
				b = append(b, '\t')
			case 'u':
				if i+4 >= len(s) {
					return ynode{}, "", errFallback
				}
				v, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
				if err != nil || (v >= 0xd800 && v <= 0xdfff) {
					return ynode{}, "", errFallback
				}
				b = utf8.AppendRune(b, rune(v))
				i += 4
			default:
				return ynode{}, "", errFallback
			}
		default:
			if b != nil {
				b = append(b, c)
			}
		}
	}
	return ynode{}, "", errFallback
}

func quotedSingleSlow(s string) (ynode, string, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return ynode{kind: 's', str: b.String()}, s[i+1:], nil
	}
	return ynode{}, "", errFallback
}

// flowSeq reads a one-line flow sequence of scalars: [a, "b", c].
func flowSeq(s string) (ynode, error) {
	n := ynode{kind: 'q'}
	s = s[1:]
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return n, errFallback
		}
		if s[0] == ']' {
			if !onlyComment(s[1:]) {
				return n, errFallback
			}
			return n, nil
		}
		var item ynode
		if s[0] == '"' || s[0] == '\'' {
			var err error
			if item, s, err = quoted(s); err != nil {
				return n, err
			}
		} else {
			end := strings.IndexAny(s, ",]")
			if end < 0 {
				return n, errFallback
			}
			text := strings.TrimRight(s[:end], " ")
			if text == "" || !plainStart(text) || strings.ContainsAny(text, "[{}#:") {
				return n, errFallback
			}
			item, s = ynode{kind: 's', plain: true, str: text}, s[end:]
		}
		n.kids = append(n.kids, item)
		s = strings.TrimLeft(s, " ")
		switch {
		case strings.HasPrefix(s, ","):
			s = s[1:]
			if strings.HasPrefix(strings.TrimLeft(s, " "), "]") {
				return n, errFallback
			}
		case strings.HasPrefix(s, "]"):
		default:
			return n, errFallback
		}
	}
}

// blockScalar reads a literal (|) or folded (>) scalar whose header is
// rest; its lines are those indented more than indent.
func (p *fastParser) blockScalar(indent int, rest string) (ynode, error) {
	folded := rest[0] == '>'
	header := rest[1:]
	chomp := byte(0)
	if header != "" && (header[0] == '-' || header[0] == '+') {
		chomp, header = header[0], header[1:]
	}
	if !onlyComment(header) {
		return ynode{}, errFallback
	}
	// Raw lines follow; comments and blank lines are content here.
	var lines []string
	content, longestBlank := -1, 0
	for p.pos < len(p.src) {
		start := p.pos
		end := strings.IndexByte(p.src[start:], '\n')
		next := len(p.src)
		if end < 0 {
			end = len(p.src)
		} else {
			end += start
			next = end + 1
		}
		l := p.src[start:end]
		sp := len(l) - len(strings.TrimLeft(l, " "))
		if sp == len(l) { // blank
			if content < 0 {
				longestBlank = max(longestBlank, sp)
			}
			lines = append(lines, "")
			p.pos = next
			continue
		}
		if content < 0 {
			if sp <= indent {
				break
			}
			content = sp
			if longestBlank > content {
				// Leading blank lines longer than the content's indentation
				// are an error for yaml.v3 to report.
				return ynode{}, errFallback
			}
		}
		if sp < content {
			if sp > indent {
				return ynode{}, errFallback
			}
			break
		}
		l = l[content:]
		if folded && l != "" && l[0] == ' ' {
			return ynode{}, errFallback
		}
		lines = append(lines, l)
		p.pos = next
		if end == len(p.src) {
			return ynode{}, errFallback // no final line break: leave it to yaml.v3
		}
	}
	p.hasCur = false
	// Trailing blank lines belong to chomping.
	last := len(lines)
	for last > 0 && lines[last-1] == "" {
		last--
	}
	var text string
	if folded {
		var b strings.Builder
		started, pending := false, 0
		for _, l := range lines[:last] {
			if l == "" {
				pending++
				continue
			}
			switch {
			case !started || pending > 0:
				b.WriteString(strings.Repeat("\n", pending))
			default:
				b.WriteByte(' ')
			}
			b.WriteString(l)
			started, pending = true, 0
		}
		text = b.String()
	} else {
		text = strings.Join(lines[:last], "\n")
	}
	switch {
	case last == 0:
		text = ""
		if chomp == '+' {
			text = strings.Repeat("\n", len(lines))
		}
	case chomp == '-':
	case chomp == '+':
		text += strings.Repeat("\n", len(lines)-last+1)
	default:
		text += "\n"
	}
	return ynode{kind: 's', str: text}, nil
}

// decodeIndexFast decodes index.yaml with the fast decoder into the same
// values decodeIndexSlow yields, or returns errFallback. It decodes one
// entry at a time and keeps only the fields Annex reads, copied out of data,
// so its memory is that of the result.
func decodeIndexFast(data string) (string, []rawChart, error) {
	if !fastText(data) {
		return "", nil, errFallback
	}
	p := &fastParser{src: data}
	if !p.peek() || p.cur.indent != 0 || isSeqItem(p.line()) {
		return "", nil, errFallback
	}
	var apiVersion string
	var charts []rawChart
	seenTop := map[string]bool{}
	for p.peek() && p.cur.indent == 0 {
		key, rest, err := splitKey(p.line())
		if err != nil || seenTop[key.str] {
			return "", nil, errFallback
		}
		seenTop[key.str] = true
		p.hasCur = false
		if key.str == "entries" && onlyComment(" "+rest) {
			if charts, err = p.entries(); err != nil {
				return "", nil, err
			}
			continue
		}
		v, err := p.value(0, rest, true)
		if err != nil {
			return "", nil, err
		}
		switch key.str {
		case "apiVersion":
			if apiVersion, err = fastString(&v); err != nil {
				return "", nil, err
			}
			apiVersion = strings.Clone(apiVersion)
		case "entries":
			if !v.isNull() && !(v.kind == 'm' && len(v.kids) == 0) {
				return "", nil, errFallback
			}
		}
	}
	if p.peek() {
		return "", nil, errFallback
	}
	return apiVersion, charts, nil
}

// entries reads the mapping below "entries:", one chart at a time.
func (p *fastParser) entries() ([]rawChart, error) {
	if !p.peek() || p.cur.indent == 0 {
		return nil, nil // entries: null
	}
	indent := p.cur.indent
	if isSeqItem(p.line()) {
		return nil, errFallback
	}
	var charts []rawChart
	seen := map[string]bool{}
	for p.peek() && p.cur.indent == indent {
		if isSeqItem(p.line()) {
			return nil, errFallback
		}
		key, rest, err := splitKey(p.line())
		if err != nil || seen[key.str] {
			return nil, errFallback
		}
		seen[key.str] = true
		p.hasCur = false
		c := rawChart{name: strings.Clone(key.str)}
		if !onlyComment(" " + rest) {
			v, err := p.value(indent, rest, true)
			if err != nil {
				return nil, err
			}
			if !v.isNull() && !(v.kind == 'q' && len(v.kids) == 0) {
				return nil, errFallback
			}
			charts = append(charts, c)
			continue
		}
		if !p.peek() || p.cur.indent < indent || !isSeqItem(p.line()) {
			charts = append(charts, c) // null
			continue
		}
		_, err = p.seqEach(p.cur.indent, func(item *ynode) error {
			c.entries = append(c.entries, rawEntry{})
			return fastEntry(item, &c.entries[len(c.entries)-1].entry)
		})
		if err != nil {
			return nil, err
		}
		charts = append(charts, c)
	}
	if p.hasCur && p.cur.indent > indent {
		return nil, errFallback
	}
	return charts, nil
}

// fastEntry fills e from one entry mapping, as yaml.v3 decodes it into a
// indexEntry; any value yaml.v3 would refuse is errFallback.
func fastEntry(n *ynode, e *indexEntry) error {
	if n.kind != 'm' {
		return errFallback
	}
	var err error
	for i := 0; i < len(n.kids) && err == nil; i += 2 {
		v := &n.kids[i+1]
		switch n.kids[i].str {
		case "name":
			e.Name, err = fastString(v)
		case "version":
			e.Version, err = fastString(v)
		case "appVersion":
			e.AppVersion, err = fastString(v)
		case "kubeVersion":
			e.KubeVersion, err = fastString(v)
		case "description":
			e.Description, err = fastString(v)
		case "home":
			e.Home, err = fastString(v)
		case "icon":
			e.Icon, err = fastString(v)
		case "digest":
			e.Digest, err = fastString(v)
		case "keywords":
			e.Keywords, err = fastStrings(v)
		case "urls":
			e.URLs, err = fastStrings(v)
		case "deprecated":
			e.Deprecated, err = fastBool(v)
		case "operatorVersion":
			e.OperatorVersion, err = fastString(v)
		case "kubernetesVersion":
			e.KubernetesVersion, err = fastString(v)
		case "removed":
			e.Removed, err = fastBool(v)
		case "extends":
			e.Extends, err = fastExtends(v)
		case "annotations":
			if v.isNull() {
				e.Annotations = nil
				continue
			}
			if v.kind != 'm' {
				return errFallback
			}
			// Only the annotations Annex reads are kept.
			e.Annotations = map[string]string{}
			for j := 0; j < len(v.kids); j += 2 {
				if v.kids[j+1].kind != 's' {
					return errFallback
				}
				if k := v.kids[j].str; k == v1alpha1.AnnotationDependencies || k == v1alpha1.AnnotationDisplayName {
					if e.Annotations[k], err = fastString(&v.kids[j+1]); err != nil {
						return err
					}
				}
			}
		}
	}
	return err
}

// fastBool decodes a boolean as yaml.v3 does: null is false.
func fastBool(n *ynode) (bool, error) {
	switch {
	case n.isNull():
		return false, nil
	case n.kind == 's' && n.plain && (n.str == "true" || n.str == "True" || n.str == "TRUE"):
		return true, nil
	case n.kind == 's' && n.plain && (n.str == "false" || n.str == "False" || n.str == "FALSE"):
		return false, nil
	}
	return false, errFallback
}

// fastExtends decodes a package entry's extends mapping as yaml.v3 decodes
// it into a *PackageExtends: nil for null, unknown keys ignored.
func fastExtends(n *ynode) (*PackageExtends, error) {
	if n.isNull() {
		return nil, nil
	}
	if n.kind != 'm' {
		return nil, errFallback
	}
	x := &PackageExtends{}
	var err error
	for i := 0; i < len(n.kids) && err == nil; i += 2 {
		v := &n.kids[i+1]
		switch n.kids[i].str {
		case "operator":
			x.Operator, err = fastString(v)
		case "name":
			x.Name, err = fastString(v)
		case "version":
			x.Version, err = fastString(v)
		case "kudo":
			x.Kudo, err = fastExtends(v)
		}
	}
	return x, err
}

// fastString decodes a scalar into a string as yaml.v3 does: its text, or
// "" for null. The text is copied: the input may be reused by the caller.
func fastString(n *ynode) (string, error) {
	if n.kind != 's' {
		return "", errFallback
	}
	if n.isNull() {
		return "", nil
	}
	return strings.Clone(n.str), nil
}

func fastStrings(n *ynode) ([]string, error) {
	if n.isNull() {
		return nil, nil
	}
	if n.kind != 'q' {
		return nil, errFallback
	}
	out := make([]string, 0, len(n.kids))
	for i := range n.kids {
		// yaml.v3 leaves null items out of a []string.
		if n.kids[i].isNull() {
			continue
		}
		s, err := fastString(&n.kids[i])
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
