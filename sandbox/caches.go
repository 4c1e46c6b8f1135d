package sandbox

// ToolCache is a tool's cache below the caller's home and the variable
// that tells the tool where it is. Inside a box HOME is airlock's own, so a
// cache the policy grants (seen in the box at its host path) is only used
// when the variable names it; the mediator sets it (`airlock sandbox check`
// lists these).
type ToolCache struct {
	Rel string // below the caller's home, e.g. ".cache/go-build"
	Env string // e.g. "GOCACHE"
}

// ToolCaches are the caches airlock names to a box when granted.
var ToolCaches = []ToolCache{
	{".cache/go-build", "GOCACHE"},
	{"go/pkg/mod", "GOMODCACHE"},
	{".cache/pip", "PIP_CACHE_DIR"},
	{".npm", "npm_config_cache"},
	{".cargo", "CARGO_HOME"},
}
