// The marketplace's tables arrive with its feature modules; the first migration prepares the
// extensions they rely on (trigram search, the exclusion constraint on appointment ranges).
export {};
