// Package toolsearch lets an agent's deferrable tools (tool.Tool.Deferrable:
// every MCP tool) wait for the API's tool search, which loads a tool's
// definition only once the model searches for it, so that many tools do
// not fill every request. [Configure] sets it up on an [agent.Config]; an
// agent without it sends every tool whole, unless its ServerTools hold a
// tool search of their own.
package toolsearch

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"slices"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/servertool"
	"github.com/agentloop/agentloop/memory"
)

// The modes of [Configure].
const (
	Auto = "auto" // on when the tool definitions would take over a tenth of the context window
	On   = "on"   // on whenever a tool is deferrable, on a model that takes tool search
	Off  = "off"  // every tool's definition in every request
)

// bm25 is the tool search tool Configure declares.
var bm25 = json.RawMessage(`{"type":"` + servertool.ToolSearchBM25 + `","name":"tool_search_tool_bm25"}`)

// Configure returns cfg set up so that each run decides, as it starts,
// whether its deferrable tools wait for a search: by mode ([On], [Off] or
// [Auto], which "" also means), the model's support
// ([llm.ModelInfo].ToolSearch) and, in auto, whether every tool's
// definition would take over a tenth of the context window (Claude Code's
// threshold). When they do, the API's BM25 tool search tool joins
// cfg.ServerTools, unless they hold one; when not, every tool is sent
// whole. A model without tool search gets every tool whole.
//
// It adds to cfg without replacing anything: a Model middleware after
// cfg.Middleware, an Observer around cfg.Observer, and the tool search
// tool after cfg.ServerTools. The model and context window are read from
// cfg.History's Config (default memory.Config's): set History first, and
// configure again for another model.
func Configure(cfg agent.Config, mode string) (agent.Config, error) {
	switch mode {
	case "":
		mode = Auto
	case Auto, On, Off:
	default:
		return cfg, fmt.Errorf("toolsearch: the mode is %q: want %q, %q or %q", mode, Auto, On, Off)
	}
	h := cfg.History
	if h == nil {
		h = memory.New(memory.Config{})
	}
	hc := h.Config()
	s := &searcher{mode: mode, history: h, inner: cfg.Observer}
	if m, _ := llm.LookupModel(hc.Model); !m.ToolSearch || mode == Off {
		if mode == On && cfg.Logger != nil {
			cfg.Logger.Info("toolsearch: tool search is on, but the model does not take it: every tool is sent", slog.String("model", hc.Model))
		}
		s.mode = Off
	} else {
		search, added := bm25, false
		if i := slices.IndexFunc(cfg.ServerTools, llm.IsToolSearch); i >= 0 {
			search = cfg.ServerTools[i]
		} else {
			cfg.ServerTools, added = append(slices.Clip(cfg.ServerTools), bm25), true
		}
		cfg.Middleware = matchSearch(cfg.Middleware, search, added)
	}
	cfg.Observer = s
	return cfg, nil
}

// matchSearch returns middleware, then one that keeps each request's tool
// search in step with its deferred tools. To a request that defers a tool
// but declares no search it adds search: memory's request for a summary on
// the server sends the history's tools, deferred as the run's are, without
// the server tools, and llm refuses deferred tools without a search. From a
// request that defers no tool (a run that does not search) it takes the
// search out, if Configure added it.
func matchSearch(middleware func(llm.Model) llm.Model, search json.RawMessage, added bool) func(llm.Model) llm.Model {
	return func(m llm.Model) llm.Model {
		if middleware != nil {
			if m = middleware(m); m == nil {
				return nil // agent.New says so
			}
		}
		return llm.ModelFunc(func(ctx context.Context, req llm.Request) iter.Seq2[llm.Event, error] {
			switch defers := slices.ContainsFunc(req.Tools, deferred); {
			case defers && !slices.ContainsFunc(req.ServerTools, llm.IsToolSearch):
				req.ServerTools = append(slices.Clip(req.ServerTools), search)
			case !defers && added:
				req.ServerTools = slices.DeleteFunc(slices.Clone(req.ServerTools), func(d json.RawMessage) bool { return string(d) == string(bm25) })
			}
			return m.Stream(ctx, req)
		})
	}
}

func deferred(s llm.ToolSpec) bool { return s.DeferLoading }

// A searcher is the Observer Configure adds: it wraps the agent's Runtime,
// whose specs each run reads as it starts, to decide there.
type searcher struct {
	mode    string
	history *memory.History // cfg.History, whose estimate learns from the API's counts
	inner   agent.Observer  // the Config's own, if any
}

// searching reports whether a run with specs searches its deferrable tools.
func (s *searcher) searching(specs []llm.ToolSpec) bool {
	if s.mode == Off || !slices.ContainsFunc(specs, deferred) {
		return false
	}
	return s.mode == On || s.history.ToolTokens(specs)*10 > s.history.Config().ContextWindow
}

// Run is the inner Observer's.
func (s *searcher) Run(ctx context.Context, a *agent.Agent, input string, run func(context.Context) iter.Seq2[agent.Event, error]) iter.Seq2[agent.Event, error] {
	if s.inner != nil {
		return s.inner.Run(ctx, a, input, run)
	}
	return run(ctx)
}

// Runtime wraps the inner Observer's, so that a run that does not search
// gets its specs without DeferLoading.
func (s *searcher) Runtime(rt agent.Runtime) agent.Runtime {
	if s.inner != nil {
		rt = s.inner.Runtime(rt)
	}
	return runtime{rt, s}
}

// Compact is the inner Observer's.
func (s *searcher) Compact(ctx context.Context, compact func(context.Context) (memory.Compaction, error)) (memory.Compaction, error) {
	if s.inner != nil {
		return s.inner.Compact(ctx, compact)
	}
	return compact(ctx)
}

// runtime is an agent's Runtime whose specs a searcher decides on.
type runtime struct {
	agent.Runtime
	s *searcher
}

func (r runtime) Specs() []llm.ToolSpec {
	specs := r.Runtime.Specs()
	if r.s.searching(specs) {
		return specs
	}
	specs = slices.Clone(specs)
	for i := range specs {
		specs[i].DeferLoading = false
	}
	return specs
}
