package cli

import (
	"bufio"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/memory"
)

// sessionFlags are the flags that choose the conversation to continue and
// whether it is saved, besides --session FILE.
type sessionFlags struct {
	cont      bool   // --continue, -c: this directory's latest session
	resume    string // --resume ID, -r ID: a given one, by id or a unique start of it
	noPersist bool   // --no-session-persistence
	// root holds every project's sessions (sessionsRoot); "" when the
	// environment names no home for it.
	root string
	list bool // the sessions command
	all  bool // sessions --all
}

func (f *sessionFlags) define(fs *flag.FlagSet) {
	fs.BoolVar(&f.cont, "continue", false, "")
	fs.BoolVar(&f.cont, "c", false, "")
	fs.StringVar(&f.resume, "resume", "", "")
	fs.StringVar(&f.resume, "r", "", "")
	fs.BoolVar(&f.noPersist, "no-session-persistence", false, "")
}

// sessionIDChars are what a session id, or the start of one, is made of:
// anything else could name a path outside the sessions directory.
var sessionIDChars = regexp.MustCompile(`^[0-9a-f-]{1,36}$`)

// check rejects flags that contradict each other, given --session file
// and whether the run is durable, whose --session names a workflow.
func (f *sessionFlags) check(file string, durable bool) error {
	f.resume = strings.ToLower(f.resume)
	switch {
	case durable && (f.resuming() || f.noPersist):
		return usageError("the durable mode keeps its sessions in Temporal: --session ID continues one; it takes no --continue, --resume or --no-session-persistence")
	case file != "" && (f.cont || f.resume != ""):
		return usageError("--session %s names the conversation itself: give it, or --continue or --resume, not both", file)
	case file != "" && f.noPersist:
		return usageError("--session %s saves the conversation, and --no-session-persistence saves none: give one of them", file)
	case f.cont && f.resume != "":
		return usageError("--continue resumes this directory's latest session, --resume ID a given one: give one of them")
	case f.resume != "" && !sessionIDChars.MatchString(f.resume):
		return usageError("--resume %q is not a session id, such as 0b8e4a52-…; agentloop sessions lists them", f.resume)
	}
	return nil
}

// sessionRetention is how long a session is kept after it last changed,
// Claude Code's cleanupPeriodDays default.
const sessionRetention = 30 * 24 * time.Hour

// sessionsRoot returns the directory of every project's sessions, in the
// user's state directory: $XDG_STATE_HOME/agentloop/sessions, else
// ~/.local/state/agentloop/sessions; on macOS ~/Library/Application
// Support/agentloop/sessions (os.UserConfigDir's), on Windows
// %LocalAppData%\agentloop\sessions (os.UserCacheDir's, which does not
// roam). It returns "" when the environment names none of them.
func sessionsRoot(getenv func(string) string) string {
	var base string
	switch runtime.GOOS {
	case "windows":
		base = getenv("LocalAppData")
	case "darwin", "ios":
		base = userConfigDir(getenv)
	default:
		if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
			base = d
		} else if h := getenv("HOME"); h != "" {
			base = filepath.Join(h, ".local", "state")
		}
	}
	if base == "" {
		return ""
	}
	return filepath.Join(base, "agentloop", "sessions")
}

// projectKey names the sessions directory of the working directory wd:
// its path with each character but letters and digits made '-', as Claude
// Code names its project directories, cut to its last 100 characters, and
// a hash of the whole path, so that /a-b and /a/b, which read alike, are
// kept apart.
func projectKey(wd string) string {
	b := []byte(wd)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	sum := sha256.Sum256([]byte(wd))
	return string(b[max(0, len(b)-100):]) + "-" + hex.EncodeToString(sum[:4])
}

// projectDir returns the sessions directory of the working directory, by
// its real path, so that a directory reached through a symbolic link has
// the same sessions.
func (f *sessionFlags) projectDir() (string, error) {
	wd, err := os.Getwd()
	if err == nil {
		wd, err = filepath.EvalSymlinks(wd)
	}
	if err != nil {
		return "", fmt.Errorf("the working directory: %w", err)
	}
	return filepath.Join(f.root, projectKey(wd)), nil
}

// pickSession sets where the session loads its history from and saves it
// to: the --session file; or, in this directory's sessions, the latest one
// for --continue, the one --resume names, or else a new one. Without a
// state directory a new session is not saved, and --continue and --resume
// are usage errors.
func (s *session) pickSession() error {
	f := &s.o.sessions
	s.persist = !f.noPersist
	if s.o.session != "" {
		s.path = s.o.session
		return nil
	}
	if f.root == "" {
		if f.cont || f.resume != "" {
			return usageError("--continue and --resume need the state directory: set HOME, or XDG_STATE_HOME")
		}
		s.persist = false
		return nil
	}
	dir, err := f.projectDir()
	if err != nil {
		return usageError("%v", err)
	}
	s.dir = dir
	switch {
	case f.cont:
		all, err := scanSessions(dir)
		if err != nil {
			return err
		}
		if len(all) == 0 {
			return usageError("--continue: no session to continue in this directory; a conversation run here without --no-session-persistence is saved for it")
		}
		s.id = all[0].ID
	case f.resume != "":
		if s.id, err = findSession(dir, f.resume); err != nil {
			return err
		}
	default:
		s.id = uuid.NewString()
	}
	s.path = filepath.Join(dir, s.id+".jsonl")
	return nil
}

// findSession returns the id of the session in dir that id is, or is the
// start of.
func findSession(dir, id string) (string, error) {
	all, err := scanSessions(dir)
	if err != nil {
		return "", err
	}
	var found []string
	for _, si := range all {
		if si.ID == id {
			return id, nil
		}
		if strings.HasPrefix(si.ID, id) {
			found = append(found, si.ID)
		}
	}
	switch len(found) {
	case 0:
		return "", usageError("no session %s in this directory; agentloop sessions lists them", id)
	case 1:
		return found[0], nil
	}
	slices.Sort(found)
	return "", usageError("%d sessions start with %s (%s): give more of the id", len(found), id, strings.Join(found, ", "))
}

// sessionInfo describes a saved session, for agentloop sessions and the
// REPL's /resume.
type sessionInfo struct {
	ID       string
	Path     string
	Modified time.Time
	// FirstPrompt is the text of the first user message, as typed, that
	// the file still holds.
	FirstPrompt string
	// CostUSD is what the model turns the file holds cost at the model
	// table's prices; Priced is false when one's model has none.
	CostUSD float64
	Priced  bool
}

// listSessions returns the sessions saved in dir, the newest first, each
// with its first prompt, and with cost their cost; none when dir does not
// exist.
func listSessions(dir string, cost bool) ([]sessionInfo, error) {
	all, err := scanSessions(dir)
	for i := range all {
		all[i].read(cost)
	}
	return all, err
}

// scanSessions is listSessions without reading the files: their ids,
// paths and times.
func scanSessions(dir string) ([]sessionInfo, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the sessions in %s: %w", dir, err)
	}
	var out []sessionInfo
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || !e.Type().IsRegular() || !sessionIDChars.MatchString(id) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // pruned by another run since
		}
		out = append(out, sessionInfo{ID: id, Path: filepath.Join(dir, e.Name()), Modified: fi.ModTime()})
	}
	slices.SortFunc(out, func(a, b sessionInfo) int {
		return cmp.Or(b.Modified.Compare(a.Modified), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// read fills in the first prompt and, with cost, the cost from the file.
// Without cost it reads no further than the first prompt, which is mostly
// the first line: /resume shows no cost, and a transcript can be long. A
// line it cannot read is skipped: the list shows what it can.
func (si *sessionInfo) read(cost bool) {
	f, err := os.OpenFile(si.Path, loadFlags, 0)
	if err != nil {
		return
	}
	defer f.Close()
	si.Priced = cost
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		var msg llm.Message
		var meta struct { // memory's, as it writes them
			Usage   llm.Usage `json:"usage"`
			Model   string    `json:"model"`
			Summary bool      `json:"summary"`
		}
		switch {
		case json.Unmarshal(line, &msg) != nil || json.Unmarshal(line, &meta) != nil:
			// skipped
		// A compaction's summary stands in for the first prompts: the
		// first one typed since is the first there is.
		case si.FirstPrompt == "" && msg.Role == llm.User && !meta.Summary:
			si.FirstPrompt = llm.TextOf(msg.Content)
			if !cost {
				return
			}
		case cost && meta.Usage != (llm.Usage{}):
			info, _ := llm.LookupModel(meta.Model)
			si.Priced = si.Priced && info.Price != (llm.Price{})
			si.CostUSD += info.Price.Cost(meta.Usage)
		}
		if err != nil {
			return
		}
	}
}

// maxListedPrompt is how much of a first prompt agentloop sessions shows.
const maxListedPrompt = 60

// listCommand is agentloop sessions: this directory's sessions, or with
// --all every project's, newest first.
func listCommand(f *sessionFlags, stdout, stderr io.Writer) error {
	if f.root == "" {
		return usageError("sessions: no state directory to keep sessions in: set HOME, or XDG_STATE_HOME")
	}
	var dirs []string
	if f.all {
		entries, err := os.ReadDir(f.root)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(f.root, e.Name()))
			}
		}
	} else {
		dir, err := f.projectDir()
		if err != nil {
			return usageError("%v", err)
		}
		dirs = append(dirs, dir)
	}
	type row struct {
		sessionInfo
		project string
	}
	var rows []row
	for _, dir := range dirs {
		all, err := listSessions(dir, true)
		if err != nil {
			return err
		}
		for _, si := range all {
			rows = append(rows, row{si, filepath.Base(dir)})
		}
	}
	if len(rows) == 0 { // said on stderr: stdout is for the rows
		msg := "agentloop: no sessions saved in this directory (agentloop sessions --all lists every directory's)"
		if f.all {
			msg = "agentloop: no sessions saved"
		}
		_, err := fmt.Fprintln(stderr, msg)
		return err
	}
	slices.SortStableFunc(rows, func(a, b row) int { return b.Modified.Compare(a.Modified) })
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	// The prompt comes last, where its width does not matter.
	head := "ID\tMODIFIED\tCOST\t"
	if f.all {
		head += "DIRECTORY\t"
	}
	fmt.Fprintln(tw, head+"FIRST PROMPT")
	for _, r := range rows {
		line := fmt.Sprintf("%s\t%s\t%s\t", r.ID, r.Modified.Local().Format("2006-01-02 15:04"), costText(r.CostUSD, r.Priced))
		if f.all {
			line += r.project + "\t"
		}
		fmt.Fprintln(tw, line+shorten(visible(strings.Join(strings.Fields(r.FirstPrompt), " ")), maxListedPrompt))
	}
	return tw.Flush()
}

// pruneSessions removes the sessions under root that have not changed for
// sessionRetention, with their stray lock and temporary files, and the
// project directories left empty. It skips a session another run holds
// (the current run holds its own), and runs at most once a day: a stamp
// file says when it last did, so that a run pays a stat for it.
func pruneSessions(root string, now time.Time) {
	stamp := filepath.Join(root, ".pruned")
	if fi, err := os.Stat(stamp); err == nil && now.Sub(fi.ModTime()) < 24*time.Hour {
		return
	}
	if err := os.WriteFile(stamp, nil, 0o600); err != nil {
		return
	}
	os.Chtimes(stamp, now, now)
	projects, _ := os.ReadDir(root)
	cutoff := now.Add(-sessionRetention)
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		dir := filepath.Join(root, p.Name())
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			fi, err := e.Info()
			if err != nil || !fi.ModTime().Before(cutoff) || !e.Type().IsRegular() {
				continue
			}
			name := e.Name()
			switch {
			case strings.HasSuffix(name, ".jsonl") && !strings.HasPrefix(name, "."):
				removeUnheld(filepath.Join(dir, name), true)
			case strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".jsonl.lock"):
				// A run that died before its first save left it.
				removeUnheld(filepath.Join(dir, strings.TrimSuffix(name[1:], ".lock")), false)
			case strings.HasPrefix(name, ".") && strings.Contains(name, ".jsonl.tmp"):
				os.Remove(filepath.Join(dir, name)) // a save that died
			}
		}
		os.Remove(dir) // only if empty
	}
}

// removeUnheld removes the session file at path, if file, and its lock,
// unless another run holds it.
func removeUnheld(path string, file bool) {
	unlock, err := lockSession(path)
	if err != nil {
		return
	}
	defer unlock()
	if file {
		os.Remove(path)
	}
}

// resuming reports whether the flags resume a saved session.
func (f *sessionFlags) resuming() bool { return f.cont || f.resume != "" }

// openSession makes the session of this directory that id names (whole or
// by a unique start) the conversation, in place of the current one, which
// stays saved as it is; an id of "" starts a new session. It is the REPL's
// /resume and /clear. On an error the current conversation goes on.
func (s *session) openSession(id string) error {
	if s.dir == "" {
		return errors.New("there are no sessions here: --session names the conversation, or there is no state directory")
	}
	fresh := id == ""
	if fresh {
		id = uuid.NewString()
	} else if found, err := findSession(s.dir, strings.ToLower(id)); err != nil {
		return err
	} else {
		id = found
	}
	if id == s.id {
		return nil
	}
	path := filepath.Join(s.dir, id+".jsonl")
	unlock := func() {}
	if s.persist {
		var err error
		if unlock, err = lockSession(path); err != nil {
			return fmt.Errorf("session %s cannot be used: %w", id, err)
		}
	}
	h := memory.New(s.memCfg)
	if !fresh {
		f, err := os.OpenFile(path, loadFlags, 0)
		if err == nil {
			h, err = s.load(f)
			f.Close()
		}
		if err != nil {
			unlock()
			return fmt.Errorf("session %s cannot be resumed: %s", id, describeLoadError(err))
		}
	}
	cfg := s.cfg
	cfg.History = h
	a, err := s.newAgent(cfg)
	if err != nil {
		unlock()
		return err
	}
	if s.unlock != nil {
		s.unlock()
	}
	s.agent, s.cfg, s.id, s.path, s.unlock = a, cfg, id, path, unlock
	return nil
}

// sessionID is the session's id as --output-format json gives it: the id,
// or the --session file as given.
func (s *session) sessionID() string { return cmp.Or(s.id, s.o.session) }

// name is the session as a message names it.
func (s *session) name() string {
	if s.id != "" {
		return "session " + s.id
	}
	return s.path
}
