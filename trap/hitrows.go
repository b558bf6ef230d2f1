package trap

// prepare makes rec's hit row (record.Hit.Prepare), with the trap it hit.
func (rec *hitRecord) prepare() {
	rec.TrapID, rec.TrapType = "", ""
	if rec.trap != nil {
		rec.TrapID, rec.TrapType = rec.trap.ID, string(rec.trap.Type)
	}
	rec.Prepare()
}
