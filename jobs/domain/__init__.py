"""Pure domain code for TrainJob admission tracking (state machine over cluster signals); no Django, no kubernetes."""
