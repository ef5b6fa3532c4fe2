package jobtype

// HasFraction is hasFraction, for the external tests.
var HasFraction = hasFraction
