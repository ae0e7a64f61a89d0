// Package agent is the orchestrator: the think → act → observe loop of the
// seed's agent.py, tying together llm, tool and memory.
package agent
