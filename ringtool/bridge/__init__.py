"""The KMES bridge service: the loop, the attach server, consumer tracking."""
