package host

// Answer is a proxy process's reply to a client or admin call: it serves no
// journal, so every call is answered as for a journal it does not serve
// (UnknownJournal: nothing was proposed; an admin call's "unknown_journal"
// refusal). The runtime answers it without a turn of the proxies.
func (h *ProxyHost) Answer(c Call) Response { return unknownJournal(c) }
