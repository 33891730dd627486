"""Linux + FRR switch driver (also the BGP/BFD half of SONiC, whose routing is FRR)."""
