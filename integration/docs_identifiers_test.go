package integration

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestDocsNameOnlyIdentifiersThatExist fails when the documentation names a Go identifier that
// the code no longer has: README.md, docs/*.md and the package comment of every package of
// every module of go.work. Docs that name types which were renamed or removed mislead more
// than docs that say nothing.
//
// What counts as a Go identifier is decided by docIdentifiers (which spans are looked at) and
// goIndex.resolve (how each is looked up); see there for the rules. A span that is not meant as
// Go (a product name that looks like one) is listed in notGo.
func TestDocsNameOnlyIdentifiersThatExist(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..")
	idx, pkgDocs, err := indexWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	var sources []docSource
	for _, pattern := range []string{"README.md", "docs/*.md"} {
		paths, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			sources = append(sources, docSource{path: p, text: string(b), markdown: true})
		}
	}
	sources = append(sources, pkgDocs...)
	if len(sources) < 3 {
		t.Fatalf("found only %d documents under %s: is the test running in integration/?", len(sources), root)
	}
	var problems []string
	for _, src := range sources {
		for _, ref := range docIdentifiers(src) {
			if _, why := idx.resolve(ref.name); why != "" {
				rel, _ := filepath.Rel(root, src.path)
				problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", rel, ref.line, ref.name, why))
			}
		}
	}
	if len(problems) > 0 {
		t.Errorf("the documentation names Go identifiers the code does not have (rename them, or describe the code as it is now):\n%s",
			strings.Join(problems, "\n"))
	}
}

// TestDocsIdentifierRules pins which spans the check looks at and how it resolves them, on a
// small index, so that a change of the rules is a deliberate one.
func TestDocsIdentifierRules(t *testing.T) {
	t.Parallel()
	idx := newGoIndex()
	idx.addDecl("service", "Runs", kindType)
	idx.addDecl("service", "NewRuns", kindOther)
	idx.addDecl("service", "settleBill", kindOther)
	idx.addMember("service", "Runs", "Sweep")
	idx.addMember("service", "Runs", "p")
	idx.addField("service", "Runs", "p", "RunsPorts")
	idx.addDecl("service", "RunsPorts", kindType)
	idx.addMember("service", "RunsPorts", "Lease")
	idx.addDecl("app", "UseCases", kindType)
	idx.addEmbed("app", "UseCases", "httpapi", "UseCases")
	idx.addDecl("httpapi", "UseCases", kindType)
	idx.addMember("httpapi", "UseCases", "Runs")
	idx.addField("httpapi", "UseCases", "Runs", "service.Runs")
	idx.addDecl("blob", "Blob", kindType)
	idx.addEmbed("blob", "Blob", "", "io.ReadSeekCloser")
	idx.addDecl("job", "Job", kindType)
	idx.testFuncs["TestComposeDeployment"] = true
	idx.testFuncs["ExamplePricing_BillFor"] = true

	for _, tc := range []struct {
		span string
		want string // "" resolves, "skip" is not looked at, else a part of the complaint
	}{
		{"service.NewRuns", ""},
		{"service.NewRuns(p)", ""},
		{"*service.Runs", ""},
		{"service.Runs{p}", ""},
		{"service.Runs.Sweep", ""},
		{"Runs.Sweep", ""},
		{"Runs.Sweep()", ""},
		{"service.Runs.p.Lease", ""},
		{"app.UseCases.Runs.Sweep", ""},
		{"blob.Blob.Read", ""}, // a member of an embedded type from outside the workspace
		{"service.settleBill", ""},
		{"TestComposeDeployment", ""},
		{"ExamplePricing_BillFor", ""},
		{"service.BlobStore", "no BlobStore in package service"},
		{"service.Runs.HandleReport", "service.Runs has no method or field HandleReport"},
		{"Runs.HandleReport", "no type Runs has a method or field HandleReport"},
		{"app.UseCases.Runs.Nope", "service.Runs has no method or field Nope"},
		{"service.publishLater", "no publishLater in package service"},
		{"HandleReport", "no function, type, method or field HandleReport"},
		{"TestGone", "no test, benchmark, example or fuzz target TestGone"},
		{"job.completed", "skip"},          // an event name
		{"service.go", "skip"},             // a file
		{"runs.go", "skip"},                // a file
		{"http.DetectContentType", "skip"}, // not a package of this workspace
		{"make run", "skip"},
		{"--lease", "skip"},
		{"MEDIAJOBS_LEASE", "skip"},
		{"X-Service-Signature", "skip"},
		{"core/service", "skip"},
		{"params.command", "skip"},
		{"jobs[3].params.command", "skip"},
		{"Update(ctx, id, fn)", "skip"},
		{"PostgreSQL", "skip"},
		{"S3_BUCKET", "skip"},
		{"URL", "skip"},
		{"Sweep", "skip"},
	} {
		var checked bool
		var got string
		refs := docIdentifiers(docSource{path: "x.md", text: "See `" + tc.span + "` here.", markdown: true})
		if len(refs) > 1 {
			t.Errorf("%q: %d references, want at most 1", tc.span, len(refs))
			continue
		}
		if len(refs) == 1 {
			checked, got = idx.resolve(refs[0].name)
		}
		switch {
		case tc.want == "skip":
			if checked {
				t.Errorf("%q: looked up (%q), want it skipped", tc.span, got)
			}
		case !checked:
			t.Errorf("%q: skipped, want it looked up", tc.span)
		case (tc.want == "") != (got == "") || !strings.Contains(got, tc.want):
			t.Errorf("%q: resolve says %q, want %q", tc.span, got, tc.want)
		}
	}

	// Package comments: backquoted spans, and pkg.Name or Type.Member written as prose.
	src := docSource{path: "doc.go", text: "Package x drives service.Service over Runs.Sweep, job.completed and\n" +
		"io.Reader, e.g. the job. See docs/metrics.md and `service.NewRuns`.\n"}
	var names []string
	for _, r := range docIdentifiers(src) {
		if checked, _ := idx.resolve(r.name); checked {
			names = append(names, fmt.Sprintf("%d:%s", r.line, r.name))
		}
	}
	if want := []string{"1:service.Service", "1:Runs.Sweep", "2:service.NewRuns"}; !slices.Equal(names, want) {
		t.Errorf("package comment: looked up %q, want %q", names, want)
	}
}

// docSource is a document to check: a markdown file, or the package comment of a Go file.
type docSource struct {
	path     string
	line     int // the line the text starts at, for package comments
	text     string
	markdown bool
}

type docRef struct {
	name string
	line int
}

var (
	// goPath is a dotted path of Go identifiers, as a span names one once a leading * or & and a
	// trailing call or composite literal are taken off.
	goPath = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	// proseRef is pkg.Name or Type.Member written without backquotes in a package comment.
	proseRef = regexp.MustCompile(`(^|[^A-Za-z0-9_./-])([A-Za-z][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)`)
)

// workspacePath prefixes the import path of every package of the workspace.
const workspacePath = "github.com/mediajobs/mediajobs/"

// fileExts end spans that name files (runs.go, pricing.json), never Go identifiers.
var fileExts = map[string]bool{
	"go": true, "mod": true, "sum": true, "md": true, "json": true, "jsonl": true, "yaml": true, "yml": true,
	"js": true, "ts": true, "mjs": true, "css": true, "html": true, "wasm": true, "sh": true, "txt": true,
	"toml": true, "version": true, "srt": true, "vtt": true, "mp4": true, "png": true, "m3u8": true,
}

// notGo are bare names in the docs that look like Go names but are not meant as ones.
var notGo = map[string]bool{
	"PostgreSQL": true, "JavaScript": true, "TypeScript": true, "JetStream": true, "GoChannel": true,
	"HttpOnly": true, "SameSite": true, "FFmpeg": true, "WebAssembly": true, "OpenAPI": true,
}

// docIdentifiers returns the spans of a document that name Go identifiers. The rules:
//
//   - In markdown, inline code spans outside fenced code blocks; in a package comment, inline
//     code spans and also pkg.Name / Type.Member written as prose.
//   - A leading * or & and a trailing (...) or {...} are taken off; what is left must be a
//     dotted path of identifiers: anything with a space, slash, dash, =, quote or bracket
//     (commands, flags, paths, headers, JSON paths) is not Go.
//   - A path whose last segment is a file extension (runs.go, pricing.json) is a file.
//   - A dotted path is looked at when its first segment is a package of the workspace or an
//     exported type of one; resolve says which. A lowercase all-letter name after a package
//     (job.completed, billing.charge) is an event or topic name, not Go.
//   - A single name is looked at only when it is an exported name of two words or more
//     (HandleReport, TestComposeDeployment) that notGo does not list.
func docIdentifiers(src docSource) []docRef {
	var refs []docRef
	add := func(span string, line int, prose bool) {
		name, ok := goName(span)
		if !ok {
			return
		}
		if prose && !strings.Contains(name, ".") {
			return
		}
		refs = append(refs, docRef{name: name, line: line})
	}
	lines := strings.Split(src.text, "\n")
	fence := ""
	for i, l := range lines {
		line := src.line + i + 1
		if src.markdown {
			trimmed := strings.TrimLeft(l, " ")
			if fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
				fence = trimmed[:3]
				continue
			}
			if fence != "" {
				if strings.HasPrefix(trimmed, fence) {
					fence = ""
				}
				continue
			}
		}
		rest := l
		for _, span := range codeSpans(l) {
			add(span, line, false)
			rest = strings.Replace(rest, span, " ", 1)
		}
		if !src.markdown {
			for _, m := range proseRef.FindAllStringSubmatch(rest, -1) {
				add(m[2], line, true)
			}
		}
	}
	return refs
}

// codeSpans returns the inline code spans of a line: text between runs of backquotes of the
// same length.
func codeSpans(l string) []string {
	var spans []string
	for i := 0; i < len(l); {
		if l[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(l) && l[i+n] == '`' {
			n++
		}
		open := l[i : i+n]
		end := -1
		for j := i + n; j < len(l); {
			k := strings.Index(l[j:], open)
			if k < 0 {
				break
			}
			k += j
			if (k+n == len(l) || l[k+n] != '`') && (k == 0 || l[k-1] != '`') {
				end = k
				break
			}
			j = k + n
			for j < len(l) && l[j] == '`' {
				j++
			}
		}
		if end < 0 {
			i += n
			continue
		}
		spans = append(spans, strings.TrimSpace(l[i+n:end]))
		i = end + n
	}
	return spans
}

// goName reads a span as a Go name under the rules of docIdentifiers.
func goName(span string) (string, bool) {
	s := strings.TrimLeft(span, "*&")
	for _, pair := range [][2]string{{"(", ")"}, {"{", "}"}} {
		if strings.HasSuffix(s, pair[1]) {
			if i := strings.Index(s, pair[0]); i > 0 {
				s = s[:i]
			}
		}
	}
	if !goPath.MatchString(s) {
		return "", false
	}
	parts := strings.Split(s, ".")
	if len(parts) == 1 {
		return s, camelCase(s) && !notGo[s]
	}
	if fileExts[parts[len(parts)-1]] {
		return "", false
	}
	return s, true
}

type declKind int

const (
	kindOther declKind = iota
	kindType
)

// goIndex is what the workspace declares, by package name: the packages of one name (every
// main, say) are merged, which errs on the side of resolving.
type goIndex struct {
	decls map[string]map[string]declKind // package → top-level name → kind
	// members are the methods and fields of each type (package → type → names); fields keeps
	// the named type of a field (package → type → field → "pkg.Type" or "Type"), embeds the
	// types a type embeds ("pkg.Type", or "pkg" empty for a type outside the workspace).
	members map[string]map[string]map[string]bool
	fields  map[string]map[string]map[string]string
	embeds  map[string]map[string][][2]string
	// typeNames are the exported type names of every package; testFuncs the Test, Benchmark,
	// Example and Fuzz functions of every _test.go file; anyName every name declared anywhere.
	typeNames map[string][]string
	testFuncs map[string]bool
	anyName   map[string]bool
}

func newGoIndex() *goIndex {
	return &goIndex{decls: map[string]map[string]declKind{}, members: map[string]map[string]map[string]bool{},
		fields: map[string]map[string]map[string]string{}, embeds: map[string]map[string][][2]string{},
		typeNames: map[string][]string{}, testFuncs: map[string]bool{}, anyName: map[string]bool{}}
}

func (x *goIndex) addDecl(pkg, name string, k declKind) {
	if x.decls[pkg] == nil {
		x.decls[pkg] = map[string]declKind{}
	}
	if x.decls[pkg][name] != kindType {
		x.decls[pkg][name] = k
	}
	if k == kindType && ast.IsExported(name) && !slices.Contains(x.typeNames[name], pkg) {
		x.typeNames[name] = append(x.typeNames[name], pkg)
	}
	x.anyName[name] = true
}

func (x *goIndex) addMember(pkg, typ, name string) {
	if x.members[pkg] == nil {
		x.members[pkg] = map[string]map[string]bool{}
	}
	if x.members[pkg][typ] == nil {
		x.members[pkg][typ] = map[string]bool{}
	}
	x.members[pkg][typ][name] = true
	x.anyName[name] = true
}

func (x *goIndex) addField(pkg, typ, field, fieldType string) {
	if x.fields[pkg] == nil {
		x.fields[pkg] = map[string]map[string]string{}
	}
	if x.fields[pkg][typ] == nil {
		x.fields[pkg][typ] = map[string]string{}
	}
	x.fields[pkg][typ][field] = fieldType
}

func (x *goIndex) addEmbed(pkg, typ, embPkg, embType string) {
	if x.embeds[pkg] == nil {
		x.embeds[pkg] = map[string][][2]string{}
	}
	x.embeds[pkg][typ] = append(x.embeds[pkg][typ], [2]string{embPkg, embType})
}

// member resolves name on type pkg.typ, through its embedded types. It returns the named type
// of a field ("" for a method or a type outside the workspace) and whether the member exists.
// A type that embeds one from outside the workspace may have any member: that is not the
// index's to deny.
func (x *goIndex) member(pkg, typ, name string, depth int) (next string, ok bool) {
	if depth > 8 {
		return "", false
	}
	if x.members[pkg][typ][name] {
		return qualify(pkg, x.fields[pkg][typ][name]), true
	}
	outside := false
	for _, e := range x.embeds[pkg][typ] {
		if e[0] == "" {
			outside = true
			continue
		}
		if next, ok := x.member(e[0], e[1], name, depth+1); ok {
			return next, true
		}
	}
	return "", outside
}

// qualify names a field's type with its package: "Runs" of package service is service.Runs.
func qualify(pkg, typ string) string {
	if typ == "" || strings.Contains(typ, ".") {
		return typ
	}
	return pkg + "." + typ
}

// resolve looks a dotted name up. checked is false when the name is not the index's to judge
// (a variable, a package from elsewhere, an event name); why says what is missing, "" when the
// name exists. The first segment decides the form:
//
//   - pkg.Name[.Member...]: pkg is a package of the workspace; Name a top-level declaration of
//     it (exported or not); each further segment a method or field of the type before it,
//     through embedded types and the named types of fields. A lowercase all-letter Name
//     (job.completed, billing.charge) is an event or topic name, not Go.
//   - Type.Member[...]: Type an exported type of some package; some type of that name must
//     have the members.
//   - Name alone: a test, benchmark, example or fuzz function if it is named like one, else
//     any function, type, method or field of the workspace.
func (x *goIndex) resolve(name string) (checked bool, why string) {
	parts := strings.Split(name, ".")
	if len(parts) == 1 {
		for _, p := range []string{"Test", "Benchmark", "Example", "Fuzz"} {
			if strings.HasPrefix(name, p) {
				if x.testFuncs[name] {
					return true, ""
				}
				return true, "no test, benchmark, example or fuzz target " + name + " in any module"
			}
		}
		if x.anyName[name] {
			return true, ""
		}
		return true, "no function, type, method or field " + name + " in any module (if it is not meant as Go, list it in notGo)"
	}
	if decls, ok := x.decls[parts[0]]; ok {
		pkg, top := parts[0], parts[1]
		if !hasUpper(top) {
			return false, ""
		}
		kind, ok := decls[top]
		if !ok {
			return true, fmt.Sprintf("no %s in package %s", top, pkg)
		}
		if len(parts) == 2 || kind != kindType {
			return true, ""
		}
		return true, x.walk(pkg, top, parts[2:])
	}
	pkgs := x.typeNames[parts[0]]
	if len(pkgs) == 0 {
		return false, ""
	}
	for _, pkg := range pkgs {
		if x.walk(pkg, parts[0], parts[1:]) == "" {
			return true, ""
		}
	}
	if len(parts) == 2 {
		return true, fmt.Sprintf("no type %s has a method or field %s", parts[0], parts[1])
	}
	return true, x.walk(pkgs[0], parts[0], parts[1:])
}

// walk resolves members one after another from type pkg.typ, and says what is missing.
func (x *goIndex) walk(pkg, typ string, members []string) string {
	for _, m := range members {
		next, ok := x.member(pkg, typ, m, 0)
		if !ok {
			return fmt.Sprintf("%s.%s has no method or field %s", pkg, typ, m)
		}
		p, t, found := strings.Cut(next, ".")
		if !found || x.decls[p][t] != kindType {
			return "" // a method, or a field of a type outside the workspace: the rest is not ours
		}
		pkg, typ = p, t
	}
	return ""
}

// camelCase tells a bare exported name of two words or more (HandleReport, AssetsURL,
// ExamplePricing_BillFor) from a word (Sweep), an acronym (URL) or a constant's spelling
// (S3_BUCKET).
func camelCase(s string) bool {
	upper, lower := 0, 0
	for _, r := range s {
		switch {
		case unicode.IsUpper(r):
			upper++
		case unicode.IsLower(r):
			lower++
		}
	}
	return unicode.IsUpper(rune(s[0])) && upper >= 2 && lower > 0 && !strings.Contains(s, "__")
}

func hasUpper(s string) bool {
	return strings.IndexFunc(s, unicode.IsUpper) >= 0
}

// indexWorkspace parses every Go file of every module go.work uses: the declarations of the
// non-test files, the test functions of the _test.go files, and the package comments to check.
func indexWorkspace(root string) (*goIndex, []docSource, error) {
	mods, err := workModules(filepath.Join(root, "go.work"))
	if err != nil {
		return nil, nil, err
	}
	idx := newGoIndex()
	var docs []docSource
	fset := token.NewFileSet()
	for _, mod := range mods {
		err := filepath.WalkDir(filepath.Join(root, mod), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); path != filepath.Join(root, mod) && (n == "testdata" || n == "node_modules" || n == "vendor" ||
					strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") {
				return nil
			}
			if strings.HasSuffix(path, "_test.go") {
				f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
				if err != nil {
					return err
				}
				for _, decl := range f.Decls {
					if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil {
						idx.testFuncs[fn.Name.Name] = true
					}
				}
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			idx.addFile(f)
			if f.Doc != nil {
				docs = append(docs, docSource{path: path, line: fset.Position(f.Doc.Pos()).Line - 1, text: commentText(f.Doc)})
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return idx, docs, nil
}

// commentText is a comment group line for line, so that a reference keeps its line number.
func commentText(g *ast.CommentGroup) string {
	var b strings.Builder
	for _, c := range g.List {
		t := c.Text
		switch {
		case strings.HasPrefix(t, "//"):
			t = strings.TrimPrefix(t, "//")
		case strings.HasPrefix(t, "/*"):
			t = strings.TrimSuffix(strings.TrimPrefix(t, "/*"), "*/")
		}
		b.WriteString(t)
		b.WriteByte('\n')
	}
	return b.String()
}

// workModules lists the directories of go.work's use directives.
func workModules(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mods []string
	inUse := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if i := strings.Index(l, "//"); i >= 0 {
			l = strings.TrimSpace(l[:i])
		}
		switch {
		case l == "use (":
			inUse = true
		case inUse && l == ")":
			inUse = false
		case inUse && l != "":
			mods = append(mods, filepath.Clean(l))
		case strings.HasPrefix(l, "use "):
			mods = append(mods, filepath.Clean(strings.TrimSpace(strings.TrimPrefix(l, "use "))))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("%s: no use directive", path)
	}
	return mods, nil
}

// addFile records a file's top-level declarations, methods, fields and embedded types.
func (x *goIndex) addFile(f *ast.File) {
	pkg := f.Name.Name
	if x.decls[pkg] == nil {
		x.decls[pkg] = map[string]declKind{}
	}
	// The workspace's imports by local name, to their package name (the path's last element):
	// a type from any other import is not the index's to know.
	imports := map[string]string{}
	for _, im := range f.Imports {
		p := strings.Trim(im.Path.Value, `"`)
		if !strings.HasPrefix(p, workspacePath) {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			imports[im.Name.Name] = name
		} else {
			imports[name] = name
		}
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				x.addDecl(pkg, d.Name.Name, kindOther)
				continue
			}
			if typ := recvType(d.Recv.List[0].Type); typ != "" {
				x.addMember(pkg, typ, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					x.addDecl(pkg, s.Name.Name, kindType)
					x.addType(pkg, s.Name.Name, s.Type, imports)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						x.addDecl(pkg, n.Name, kindOther)
					}
				}
			}
		}
	}
}

// addType records the fields and embedded types of a struct, and the methods and embedded
// interfaces of an interface.
func (x *goIndex) addType(pkg, typ string, expr ast.Expr, imports map[string]string) {
	var list *ast.FieldList
	switch t := expr.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list = t.Methods
	default:
		// A defined type over another (type A B) or an alias takes B's members: treat it as
		// embedding B.
		if p, n := typeName(expr, pkg, imports); n != "" {
			x.addEmbed(pkg, typ, p, n)
		}
		return
	}
	for _, fld := range list.List {
		p, n := typeName(fld.Type, pkg, imports)
		if len(fld.Names) == 0 {
			if n != "" {
				x.addEmbed(pkg, typ, p, n)
				field := n[strings.LastIndex(n, ".")+1:] // an embedded field is named for its type
				x.addMember(pkg, typ, field)
				if p != "" {
					x.addField(pkg, typ, field, p+"."+n)
				}
			}
			continue
		}
		for _, name := range fld.Names {
			x.addMember(pkg, typ, name.Name)
			if n != "" && p != "" {
				x.addField(pkg, typ, name.Name, p+"."+n)
			}
		}
	}
}

// typeName returns the package and name of a named type expression (*T, pkg.T, T[X]). The
// package is "" for a type from outside the workspace (the standard library, a dependency) or
// a predeclared one, and the name "" for an unnamed type.
func typeName(e ast.Expr, pkg string, imports map[string]string) (string, string) {
	switch t := e.(type) {
	case *ast.StarExpr:
		return typeName(t.X, pkg, imports)
	case *ast.IndexExpr:
		return typeName(t.X, pkg, imports)
	case *ast.IndexListExpr:
		return typeName(t.X, pkg, imports)
	case *ast.Ident:
		if isPredeclared(t.Name) {
			return "", t.Name
		}
		return pkg, t.Name
	case *ast.SelectorExpr:
		if id, ok := t.X.(*ast.Ident); ok {
			if p, ok := imports[id.Name]; ok {
				return p, t.Sel.Name
			}
			return "", id.Name + "." + t.Sel.Name
		}
	}
	return "", ""
}

func isPredeclared(name string) bool {
	switch name {
	case "bool", "byte", "complex64", "complex128", "error", "float32", "float64", "int", "int8", "int16", "int32",
		"int64", "rune", "string", "uint", "uint8", "uint16", "uint32", "uint64", "uintptr", "any", "comparable":
		return true
	}
	return false
}

// recvType is the type name of a method's receiver: T of (t T), (t *T) and (t *T[K]).
func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvType(t.X)
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}
