package trap

// CloseJournal closes the engine's journal without applying what it holds, as a killed
// process leaves it: the next engine on the directory replays it.
func (e *Engine) CloseJournal() { e.journal.close() }
