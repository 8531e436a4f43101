package play

// The view is what the page draws: plain data, JSON-encoded by the server
// (package play/web). It is derived from the world after every move and
// holds nothing the world does not.

// View is the whole screen of one position.
type View struct {
	Level  LevelView `json:"level"`
	Status Status    `json:"status"`
	// Verdict is the goal's sentence for the status: what is still missing,
	// what was reached, or what went wrong.
	Verdict string `json:"verdict"`
	// Hint is the level's hint for this position and this many mistakes.
	Hint     string        `json:"hint"`
	Machines []MachineView `json:"machines"`
	InFlight []MessageView `json:"inflight"`
	// Moves are the moves legal now, as buttons.
	Moves []MoveView `json:"moves"`
	// Prompt, when set, is a question the player answers for a role the
	// level made manual; its choices are moves.
	Prompt *PromptView `json:"prompt,omitempty"`
	// Timeline narrates every accepted move, oldest first.
	Timeline []Event `json:"timeline"`
	// Rejected explains why the move tried was not played (a wrong answer
	// or an illegal move); Mistake says whether it counts as a mistake.
	Rejected string `json:"rejected,omitempty"`
	Mistake  bool   `json:"mistake,omitempty"`
	// Log is the accepted moves, what the URL fragment holds.
	Log []string `json:"log"`
}

// Status is a goal's state.
type Status string

// The goal states.
const (
	Open    Status = "open"
	Reached Status = "reached"
	Failed  Status = "failed"
)

// LevelView is the level's text.
type LevelView struct {
	ID    string   `json:"id"`
	Act   string   `json:"act"`
	Title string   `json:"title"`
	Intro []string `json:"intro"`
	Goal  string   `json:"goal"`
}

// MachineView is one machine: a node (acceptor or replica) or a matchmaker.
type MachineView struct {
	ID    string   `json:"id"`
	Kind  string   `json:"kind"` // acceptor, replica, matchmaker, spare
	Up    bool     `json:"up"`
	Role  string   `json:"role"` // leader, follower, candidate, replica, matchmaker, down, wiped
	Notes []string `json:"notes,omitempty"`
	// Promised is the acceptor's promise, as round.node.
	Promised string `json:"promised,omitempty"`
	Floor    uint64 `json:"floor"`
	Chosen   uint64 `json:"chosen"`
	Applied  uint64 `json:"applied"`
	// Disk says what the disk holds: ok, wiped, or the slots that rotted.
	Disk string `json:"disk"`
	// Column is the machine's column on a grid (-1 off a grid).
	Column int        `json:"column"`
	Row    int        `json:"row"`
	Log    []SlotView `json:"log"`
}

// SlotView is one slot of a machine's log.
type SlotView struct {
	Slot   uint64 `json:"slot"`
	Ballot string `json:"ballot"`
	Text   string `json:"text"`
	Chosen bool   `json:"chosen"`
	Faulty bool   `json:"faulty,omitempty"`
}

// MessageView is one message in flight.
type MessageView struct {
	ID   int    `json:"id"`
	From string `json:"from"`
	To   string `json:"to"`
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// MoveView is one legal move.
type MoveView struct {
	Move  string `json:"move"`
	Label string `json:"label"`
	// Group sorts the buttons: message, node, client, cell.
	Group string `json:"group"`
	Key   string `json:"key,omitempty"` // a keyboard shortcut, if any
}

// PromptView is a question the player answers.
type PromptView struct {
	Question string     `json:"question"`
	Choices  []MoveView `json:"choices"`
}

// Event is one line of the timeline.
type Event struct {
	N    int    `json:"n"`
	Move string `json:"move"`
	Text string `json:"text"`
}

// LevelSummary is a level in the level map.
type LevelSummary struct {
	ID    string `json:"id"`
	Act   string `json:"act"`
	Title string `json:"title"`
	Goal  string `json:"goal"`
}
