"""Layer 3: public consumers built from the protocol (layer 1) and OS (layer 2) parts."""
