// Package memory is the conversation history of the agent loop: the seed's
// context.py. It counts tokens, compacts the history when it outgrows the
// limit, and never breaks the Messages API's structural rules.
package memory
