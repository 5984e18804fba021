"""A scripted stand-in for the model APIs the real agent CLIs call (standard library only).

`script` (what to answer, what was asked), `server` (one HTTP server, every protocol), one
module per wire format: `anthropic` (Claude Code), `responses` (Codex), `chat` (aider).
Built on what the real tools were seen to send and accept (docs/specs/agents.md).
"""
