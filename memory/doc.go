// Package memory is the conversation history of the agent loop: the seed's
// context.py. A [History] holds the messages in llm's own types, keeps them
// within the Messages API's rules, counts their tokens, compacts them when
// they outgrow the context window, and saves them as JSONL.
//
// The rules matter because one broken history fails every later request: a
// tool_use left without its tool_result after a cancel or a crash makes the
// API answer 400 forever. [History.Validate] checks the very rules that
// anthropictest.CheckRequest enforces, and [History.Repair] fixes what
// breaks them (an unanswered call gets a synthetic is_error result, "not
// executed: interrupted").
//
// Token counts are exact where the API has measured them: the usage of the
// last turn covers everything sent so far. Only what was added since is
// estimated, at a characters-per-token ratio learned from the API's own
// counts. [History.Compact] shrinks the history in escalating steps (clear
// old tool results, summarise with a model call, hard cut), always between
// complete turns. The model's context window and prices come from
// [llm.Models].
//
// Package agent drives a History; see its loop for one in use.
package memory
