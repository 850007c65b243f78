"""Memory: stores and policies. The built-in ones (membench.memory.stores, .policies and the
recency readers of .recency) register themselves when membench.plugins loads them."""
