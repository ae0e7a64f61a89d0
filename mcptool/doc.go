// Package mcptool registers the tools of an MCP server in a [tool.Registry],
// so that an agent can use the tools people already run as MCP servers.
//
// It connects with the official MCP Go SDK: to a command over stdio
// ([ConnectCommand], given an [*os/exec.Cmd]), to a URL over streamable
// HTTP ([ConnectURL]), or over any [mcp.Transport] ([Connect]).
// [Server.Register] then lists the server's tools and registers each one,
// its input schema passed through as the server gives it:
//
//	srv, err := mcptool.ConnectCommand(ctx, exec.Command("npx", "-y", "@modelcontextprotocol/server-everything"), nil)
//	if err != nil {
//		return err // names the command, with the end of its stderr
//	}
//	defer srv.Close() // ends the process and anything it started
//	if err := srv.Register(ctx, reg); err != nil {
//		log.Print(err) // some tools were skipped; the others are registered
//	}
//
// A schema the local validator cannot use, such as a draft-04 schema or
// one with a remote $ref, does not cost the tool: it is registered with its
// input checked only for being a JSON object (see [tool.NewRaw]), since the
// server validates its own input.
//
// A server started as a command does not inherit this process's
// environment, which holds API keys: it gets HOME, LOGNAME, PATH, SHELL,
// TERM and USER, as the official SDKs give, and what [Options.Env] adds.
//
// A server over HTTP that requires authorization is authorized as the MCP
// specification describes when [Options.OAuth] is set: protected resource
// and authorization server discovery (with the 2025-03-26 fallbacks),
// dynamic registration, client ID metadata documents or a pre-registered
// client, the authorization code with PKCE and the resource parameter
// (the user consents in a browser; see [OAuth.OpenURL]), step-up on
// insufficient_scope, refresh, and the client-credentials and cross-app
// grants for machines. A [TokenStore], such as [DirStore], keeps the tokens
// between runs.
//
// The client serves what servers may ask of it: elicitation (a form for
// the user, or its defaults), roots ([Options.Roots]), sampling with the
// agent's own model ([Sampling]), progress notifications, and tool list
// changes, after which the new tools are registered too.
//
// A call is forwarded with its context, so cancelling the run cancels the
// call on the server. The result maps onto a tool result: text as text,
// PNG, JPEG, GIF and WebP images as images, PDF resources as documents,
// structured content as its JSON only when the result has no text (a
// server is asked to repeat it as text, and the model needs it once), and
// what the API cannot take (audio, resource links, other embedded
// resources) as a line of text describing it, rather than silently
// dropped. An MCP tool error becomes an is_error result with the server's
// text. A server that crashes mid-run turns its tools' calls into is_error
// results naming the server; the other tools keep working.
//
// Each tool is registered as mcp__server__tool ([ToolName]), as Claude
// Code names MCP tools, so that the model, permission rules and logs can
// tell which server a tool comes from, and two servers' tools of one name
// both work.
package mcptool
