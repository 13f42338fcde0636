# local-id identity nranks rank-in-communicator
comm 0 8a8730ffc62c4678 1 0
