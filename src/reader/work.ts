// Counters of the work the reader's parse structures cost, for tests that pin a cost without
// timing it (wall time is flaky on a shared machine): how many entry rows were indexed into the
// tree, how many were copied to a new table, how many branch items were listed and hashed, and
// how many bytes of session files the snapshot passes read (file-pass.ts). Plain numbers,
// process-wide; tests read differences.
export const work = {
  /** Entry rows the tree was (re)built over: a whole parse counts every row, an extension its new ones. */
  rowsIndexed: 0,
  /** Entry rows copied into a new table (an extension that could not append in place). */
  rowsCopied: 0,
  /** Branch items listed (codes written for a branch's item list). */
  itemsListed: 0,
  /** Item keys hashed for the follow digest. */
  keysHashed: 0,
  /** Bytes the snapshot passes read from session files: forward, backward and windows. */
  bytesRead: 0,
  /** Of those, bytes read by backward verifications (a full verification reads every byte). */
  bytesVerified: 0,
};
