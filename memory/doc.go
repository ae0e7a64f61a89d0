// Package memory is the conversation history of the agent loop: the seed's
// context.py. A [History] holds the messages in llm's own types, keeps them
// within the Messages API's rules, counts their tokens, and compacts them
// when they outgrow the context window. Package memory/jsonl saves a
// history as JSONL, through [History.Snapshot] and [Restore].
//
// The rules matter because one broken history fails every later request: a
// tool_use left without its tool_result after a cancel or a crash makes the
// API answer 400 forever. [History.Repair] fixes what breaks the rules that
// anthropictest.CheckRequest enforces. Token counts are exact where the API
// has measured them, and estimated since. [History.Compact] shrinks the
// history in escalating steps, always between complete turns.
package memory
