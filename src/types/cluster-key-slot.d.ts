declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot (0 to 16383) of a key, by its `{hash tag}` when it has one. */
  function calculateSlot(key: string | Buffer): number;
  export = calculateSlot;
}
