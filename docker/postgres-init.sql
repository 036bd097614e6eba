-- The mock processor keeps its ledger in a database of its own.
CREATE DATABASE once_processor;
