package evaluation

// The sensors' readers (package sensors) install themselves into geo.Open
// when loaded: evaluation opens scenes by name, so it loads them, and every
// delivery a command recognises is recognised here too.
import _ "github.com/pnec/pnec/sensors"
