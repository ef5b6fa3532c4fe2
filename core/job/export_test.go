package job

// NewIDAt is NewID at a given time.
var NewIDAt = newID
