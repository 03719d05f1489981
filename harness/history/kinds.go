package history

// HasValue reports whether events of this kind carry a boolean in Value.
// The encoder writes "v" for these kinds even when it is false, because
// for them false is information (a readiness flag went down), not absence.
func (k Kind) HasValue() bool {
	switch k {
	case PodCondition, PodTerminating, ContainerStarted, ContainerReady, ContainerPostStartDone, ContainerAppStarted, ContainerServing:
		return true
	}
	return false
}

// IsFault reports whether k is one of the fault.* kinds.
func (k Kind) IsFault() bool {
	return k >= FaultBegin && k <= FaultNotApplied
}

// IsContainerLevel reports whether events of this kind name a container
// (container.* and probe.result).
func (k Kind) IsContainerLevel() bool {
	return (k >= ContainerStartRequested && k <= ContainerServing) || k == ProbeResult
}

// valid reports whether k is a real kind (not KindInvalid, not out of range).
func (k Kind) valid() bool { return k > KindInvalid && k < kindCount }
