package syncloop

import "github.com/splitlet/splitlet/internal/testwait"

// waitFor is the package's one way for a test to wait for something another
// goroutine does.
var waitFor = testwait.For
