package fakemodel

import "strings"

// Redirects reports whether the Claude Code CLI could take the environment
// variable name as a reason to call something other than the fake (a
// provider, a gateway, a proxy, a telemetry collector) or as a credential
// for one. A CLI pointed at the fake with Env must not inherit any of them:
// with CLAUDE_CODE_USE_BEDROCK=1 in its environment, for example, the CLI
// 2.1.330 leaves ANTHROPIC_BASE_URL aside and calls Bedrock. Give Redirects
// to session.Config.DropEnv.
//
// The rule, from the variable names in the CLI's binary (2.1.330), errs on
// the side of dropping; names are compared in upper case:
//
//   - every proxy variable: a name ending in _PROXY (HTTP_PROXY,
//     HTTPS_PROXY, ALL_PROXY, NO_PROXY in either case, GLOBAL_AGENT_*,
//     CLAUDE_CODE_HTTPS_PROXY, NODE_USE_ENV_PROXY, …);
//   - the cloud providers' families: ANTHROPIC_* (ANTHROPIC_BASE_URL,
//     ANTHROPIC_AUTH_TOKEN, ANTHROPIC_BEDROCK_*, ANTHROPIC_VERTEX_*,
//     ANTHROPIC_FOUNDRY_*, …; Env sets the two the fake needs), AWS_*,
//     AZURE_*, GOOGLE_*, GCLOUD_*, GCP_*, CLOUDSDK_*, VERTEX_REGION_*,
//     CLOUD_ML_REGION, and OpenTelemetry's OTEL_*; for the Codex CLI,
//     OPENAI_* (OPENAI_API_KEY, OPENAI_BASE_URL) and CODEX_* (CODEX_HOME,
//     its config and logins: Env sets the one the fake needs); for
//     Gemini CLI, GEMINI_* (GEMINI_API_KEY, GEMINI_CLI_HOME, GEMINI_MODEL,
//     GEMINI_CLI_SYSTEM_SETTINGS_PATH, …: GeminiEnv sets the ones the
//     fake needs) beside GOOGLE_* (GOOGLE_GEMINI_BASE_URL,
//     GOOGLE_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_CLOUD_PROJECT, …);
//   - the CLI's switches to another backend or login: CLAUDE_CODE_USE_*,
//     CLAUDE_CODE_SKIP_*, CLAUDE_CODE_HOST_*, CLAUDE_CODE_REMOTE*,
//     CLAUDE_BRIDGE_*, CLAUDE_LOCAL_OAUTH_*, CCR_*,
//     CLAUDE_CODE_ENABLE_TELEMETRY;
//   - any other CLAUDE* name that names a credential or an address: one
//     holding OAUTH, API_KEY, AUTH, GATEWAY, PROVIDER, CERT, CLIENT_KEY,
//     CREDS or URL, or _TOKEN as a word (CLAUDE_CODE_OAUTH_TOKEN,
//     CLAUDE_CODE_API_KEY_FILE_DESCRIPTOR, CLAUDE_CODE_API_BASE_URL, …).
//
// Everything else is kept: PATH, HOME, CLAUDE_CONFIG_DIR, the CLI's
// tuning (CLAUDE_CODE_MAX_OUTPUT_TOKENS, …) and the user's own variables.
// The CLI's settings files can set variables too (the "env" key of
// settings.json) and name an apiKeyHelper; those are the user's files,
// and Redirects cannot see them.
func Redirects(name string) bool {
	n := strings.ToUpper(name)
	if strings.HasSuffix(n, "_PROXY") {
		return true
	}
	for _, p := range redirectPrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	if n == "CLOUD_ML_REGION" || n == "CLAUDE_CODE_ENABLE_TELEMETRY" {
		return true
	}
	if !strings.HasPrefix(n, "CLAUDE") {
		return false
	}
	for _, w := range credentialWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return strings.HasSuffix(n, "_TOKEN") || strings.Contains(n, "_TOKEN_")
}

var redirectPrefixes = []string{
	"ANTHROPIC_", "AWS_", "AZURE_", "GOOGLE_", "GCLOUD_", "GCP_", "CLOUDSDK_", "VERTEX_REGION_", "OTEL_",
	"OPENAI_", "CODEX_", "GEMINI_",
	"CLAUDE_CODE_USE_", "CLAUDE_CODE_SKIP_", "CLAUDE_CODE_HOST_", "CLAUDE_CODE_REMOTE",
	"CLAUDE_BRIDGE_", "CLAUDE_LOCAL_OAUTH_", "CCR_",
}

var credentialWords = []string{"OAUTH", "API_KEY", "AUTH", "GATEWAY", "PROVIDER", "CERT", "CLIENT_KEY", "CREDS", "URL"}
