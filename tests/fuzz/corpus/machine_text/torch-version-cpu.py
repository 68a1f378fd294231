__version__ = '1.13.0'
debug = False
cuda: Optional[str] = None
