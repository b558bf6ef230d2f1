package decoy

// WhereRobotsTxt is a placement in robots.txt's comments.
const WhereRobotsTxt = "robots_txt"

// robotsKind is /robots.txt (text.go renders it) disallowing the site's listed traps. A
// lure never points at it: it is not a page an agent reads on the way.
type robotsKind struct{}

func init() { register(robotsKind{}) }

func (robotsKind) About() About {
	return About{Name: "robots", Help: "/robots.txt disallowing the other traps", Order: 40, Format: FormatText,
		FixedPath: "/robots.txt", Wheres: map[string]string{WhereRobotsTxt: "robots.txt"}}
}

func (robotsKind) render(r *renderer) Rendered { return r.robots() }
func (robotsKind) skeletal()                   {}
func (robotsKind) visibleLinks()               {}
func (robotsKind) disallows()                  {}
